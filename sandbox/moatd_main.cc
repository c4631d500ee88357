// sandbox/moatd_main.cc: moatd, the supervisor.
int main() { return 0; }
