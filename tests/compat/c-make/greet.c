#include "greet.h"
#include <stdio.h>
int greet(char *buf, size_t n, const char *name) { return snprintf(buf, n, "Hello, %s!", name); }
