#include <stdio.h>
#include "config.h"
int main(void) {
  printf("sizeof_long=%d stdint=%d little_endian=%d\n", SIZEOF_LONG, HAVE_STDINT_H,
         WORDS_LITTLE_ENDIAN);
  return 0;
}
