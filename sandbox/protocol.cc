// sandbox/protocol.cc: frame encoding and decoding.
#include "sandbox/protocol.h"
