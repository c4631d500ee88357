#include <stdio.h>
#include <string.h>
#include "greet.h"
int main(void) {
  char buf[16];
  int failed = 0;
  greet(buf, sizeof buf, "make");
  if (strcmp(buf, "Hello, make!") != 0) { printf("FAIL: got '%s'\n", buf); failed = 1; }
  if (greet(buf, 8, "truncated") != 17 || strlen(buf) != 7) { puts("FAIL: truncation"); failed = 1; }
  puts(failed ? "c-make tests FAILED" : "c-make tests passed");
  return failed;
}
