#include "sum.h"
long sum(const long *v, int n) {
  long s = 0;
  for (int i = 0; i < n; ++i) s += v[i];
  return s;
}
