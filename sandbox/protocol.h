// sandbox/protocol.h: moatd's wire protocol: length-prefixed JSON frames (docs/protocol.md).
#pragma once
