package job

import "golang.org/x/sys/unix"

// schedAffinity is how many CPUs the process may run on
// (sched_getaffinity(2)).
func schedAffinity(pid int) (int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		return 0, err
	}
	return set.Count(), nil
}
