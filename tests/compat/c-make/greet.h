#pragma once
#include <stddef.h>
/* Writes "Hello, NAME!" into buf (at most n bytes); returns its length. */
int greet(char *buf, size_t n, const char *name);
