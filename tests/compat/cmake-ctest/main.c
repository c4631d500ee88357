#include <stdio.h>
#include <stdlib.h>
#include "sum.h"
int main(int argc, char **argv) {
  long v[16];
  int n = 0;
  for (int i = 1; i < argc && n < 16; ++i) v[n++] = strtol(argv[i], NULL, 10);
  printf("%ld\n", sum(v, n));
  return 0;
}
