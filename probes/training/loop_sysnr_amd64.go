package training

// loopSyscalls names the x86_64 Linux system calls the loop sampler tells
// apart (arch/x86/entry/syscalls/syscall_64.tbl).
var loopSyscalls = map[int]string{
	0: "read", 7: "poll", 23: "select", 270: "pselect6", 271: "ppoll", 232: "epoll_wait", 281: "epoll_pwait", 441: "epoll_pwait2",
	45: "recvfrom", 47: "recvmsg", 202: "futex", 35: "nanosleep", 230: "clock_nanosleep", 16: "ioctl", 24: "sched_yield",
}
