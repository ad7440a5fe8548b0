package runner

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// denyNetwork takes the network away from the calling process, every thread of it and
// everything it starts from now on: a seccomp filter (the kernel's, which no descendant can
// lift) fails the creation of any socket but a Unix one with EACCES, and io_uring, whose
// operations would pass beside the filter, with ENOSYS. A session needs no network to get its
// tree and return its output (both travel on the connection the session process already
// holds), so a session that did not ask for egress reaches nothing, whatever the pod's network
// or the namespace's NetworkPolicies would allow.
func denyNetwork() error {
	prog, err := noNetworkFilter(runtime.GOARCH)
	if err != nil {
		return err
	}
	// no_new_privs is a thread's: the seccomp call must come from the thread that set it, or
	// the kernel refuses it (EACCES) when the goroutine moved to another thread in between.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Required to install a filter without CAP_SYS_ADMIN, and harmless here: a session gains no
	// privilege through an exec (a pod's container already runs so).
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("denying the session the network: no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	// TSYNC: the Go runtime's other threads get the filter too, so no thread of this process
	// starts a command without it.
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("denying the session the network: seccomp: %w", errno)
	}
	return nil
}

// noNetworkFilter is denyNetwork's program for the architecture arch.
func noNetworkFilter(arch string) ([]unix.SockFilter, error) {
	var audit uint32
	var socket, socketpair, ioUringSetup uint32
	switch arch {
	case "amd64":
		audit, socket, socketpair, ioUringSetup = unix.AUDIT_ARCH_X86_64, 41, 53, 425
	case "arm64":
		audit, socket, socketpair, ioUringSetup = unix.AUDIT_ARCH_AARCH64, 198, 199, 425
	default:
		return nil, fmt.Errorf("denying the session the network: no seccomp filter for %s", arch)
	}
	const (
		offNr   = 0  // seccomp_data.nr
		offArch = 4  // seccomp_data.arch
		offArg0 = 16 // the low half of seccomp_data.args[0] (little-endian)
		// x32BIT marks the syscalls of the x32 ABI, which arrive with the x86-64 arch.
		x32Bit = 0x40000000
	)
	allow := bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}
	deny := bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)}
	enosys := bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)}
	insns, err := bpf.Assemble([]bpf.Instruction{
		/* 0 */ bpf.LoadAbsolute{Off: offArch, Size: 4},
		/* 1 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: audit, SkipTrue: 1},
		/* 2 */ enosys, // another ABI (32-bit calls): a session needs none of it
		/* 3 */ bpf.LoadAbsolute{Off: offNr, Size: 4},
		/* 4 */ bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: x32Bit, SkipTrue: 8}, // → 13
		/* 5 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: socket, SkipTrue: 3}, // → 9
		/* 6 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: socketpair, SkipTrue: 2}, // → 9
		/* 7 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: ioUringSetup, SkipTrue: 5}, // → 13
		/* 8 */ allow,
		/* 9 */ bpf.LoadAbsolute{Off: offArg0, Size: 4}, // the socket's family
		/* 10 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipTrue: 1}, // → 12
		/* 11 */ deny,
		/* 12 */ allow,
		/* 13 */ enosys,
	})
	if err != nil {
		return nil, err
	}
	prog := make([]unix.SockFilter, len(insns))
	for i, in := range insns {
		prog[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	return prog, nil
}
