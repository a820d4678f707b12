package training

// loopSyscalls names the arm64 Linux system calls the loop sampler tells
// apart (include/uapi/asm-generic/unistd.h).
var loopSyscalls = map[int]string{
	63: "read", 72: "pselect6", 73: "ppoll", 22: "epoll_pwait", 441: "epoll_pwait2",
	207: "recvfrom", 212: "recvmsg", 98: "futex", 101: "nanosleep", 115: "clock_nanosleep", 29: "ioctl", 124: "sched_yield",
}
