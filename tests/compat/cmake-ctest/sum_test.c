#include <stdio.h>
#include "sum.h"
int main(void) {
  const long v[] = {1, 2, 3, -4};
  if (sum(v, 4) != 2 || sum(v, 0) != 0) { puts("FAIL"); return 1; }
  puts("cmake-ctest tests passed");
  return 0;
}
