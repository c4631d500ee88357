#pragma once
long sum(const long *v, int n);
