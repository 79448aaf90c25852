#include "textflag.h"

// func request(args *[6]uintptr) uintptr
//
// Valgrind's client request on amd64 (valgrind.h,
// VALGRIND_DO_CLIENT_REQUEST_EXPR): RAX points at the request and its
// five arguments, the "special instruction preamble" (four rotations of
// RDI by 128 bits in all, a no-op) followed by xchg rbx,rbx tells the
// running tool, and the answer comes back in RDX (0 when not under
// Valgrind: the sequence is then a no-op).
TEXT ·request(SB), NOSPLIT, $0-16
	MOVQ args+0(FP), AX
	MOVQ $0, DX
	ROLQ $3, DI
	ROLQ $13, DI
	ROLQ $61, DI
	ROLQ $51, DI
	XCHGQ BX, BX
	MOVQ DX, ret+8(FP)
	RET
