#!/usr/bin/env python3
"""Writes the /proc and /sys fixture trees the probe tests read.

Each scenario has snapshots t0, t1 (, t2) taken one second apart; the tests
collect once per snapshot with frame times one second apart. Units as the
kernel writes them: /proc/stat and /proc/PID/stat in USER_HZ ticks (1/100 s),
/proc/diskstats sectors of 512 bytes and milliseconds, /proc/meminfo kB
(KiB), /proc/pressure totals in microseconds. Run from this folder:
python3 gen.py
"""
import os, shutil

HERE = os.path.dirname(os.path.abspath(__file__))

def w(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)

def stat(all_, cores, ctxt, running=2, blocked=0):
    def line(name, t):
        return name + " " + " ".join(str(x) for x in t) + " 0 0\n"
    s = line("cpu ", all_)
    for i, c in cores:
        s += line("cpu%d" % i, c)
    s += "intr 0\nctxt %d\nbtime 1700000000\nprocesses 5000\nprocs_running %d\nprocs_blocked %d\nsoftirq 0 0\n" % (ctxt, running, blocked)
    return s

def sumcores(cores):
    return [sum(c[k] for _, c in cores) for k in range(8)]

def pidstat(pid, comm, state, ppid, utime, stime, threads, start, rss):
    cols = [str(pid), "(%s)" % comm, state, str(ppid), str(pid), str(pid), "0", "-1", "4194304",
            "1000", "0", "0", "0", str(utime), str(stime), "0", "0", "20", "0", str(threads), "0",
            str(start), "1000000000", str(rss)] + ["0"] * 28
    return " ".join(cols) + "\n"

def diskline(major, minor, name, reads, sr, rms, writes, sw, wms, inflight, ioms):
    return "%4d %7d %s %d 0 %d %d %d 0 %d %d %d %d %d 0 0 0 0 0 0\n" % (
        major, minor, name, reads, sr, rms, writes, sw, wms, inflight, ioms, rms + wms)

NETHDR = ("Inter-|   Receive                                                |  Transmit\n"
          " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n")

def netline(name, rx, tx):
    return "%6s: %d 10 0 0 0 0 0 0 %d 10 0 0 0 0 0 0\n" % (name, rx, tx)

def pressure(some10, some_total, full10, full_total):
    s = "some avg10=%.2f avg60=0.00 avg300=0.00 total=%d\n" % (some10, some_total)
    if full10 is not None:
        s += "full avg10=%.2f avg60=0.00 avg300=0.00 total=%d\n" % (full10, full_total)
    return s

def meminfo(total, free, avail, cached, swap_total, swap_free):
    return ("MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\nBuffers:          1024 kB\n"
            "Cached:         %d kB\nSwapCached:        0 kB\nSwapTotal:      %d kB\nSwapFree:       %d kB\n"
            "HugePages_Total:       0\n") % (total, free, avail, cached, swap_total, swap_free)

def vmstat(si, so, maj):
    return "nr_free_pages 1000\npswpin %d\npswpout %d\npgfault 99999\npgmajfault %d\n" % (si, so, maj)

def normal():
    """A 2-core virtio box. t0→t1: cpu0 95% busy (a pegged core), cpu1 10%
    busy and 10% iowait; vda reads 1 MiB and writes 512 KiB, 25% busy, await
    2 ms; eth0 1000000/250000 bytes; psi cpu some 20%, io some 5% full 3%;
    swap in 50 and out 200 pages/s, 100 major faults/s; process 100
    "python (main)" 95% (thread 100 at 90%), its worker 200 at 30%."""
    for snap in ("t0", "t1"):
        root = os.path.join(HERE, "normal", snap)
        one = snap == "t1"
        c0 = [500 + 90 * one, 0, 250 + 5 * one, 4000 + 5 * one, 50, 0, 0, 0]
        c1 = [500 + 10 * one, 0, 250, 4000 + 80 * one, 50 + 10 * one, 0, 0, 0]
        cores = [(0, c0), (1, c1)]
        w(root + "/proc/stat", stat(sumcores(cores), cores, 10000 + 1500 * one))
        w(root + "/proc/loadavg", "1.50 0.75 0.25 2/300 5000\n")
        w(root + "/proc/meminfo", meminfo(16384000, 2048000, 8192000, 4096000, 2097152, 1048576))
        w(root + "/proc/vmstat", vmstat(100 + 50 * one, 200 + 200 * one, 1000 + 100 * one))
        w(root + "/proc/diskstats",
          diskline(7, 0, "loop0", 10 + 5 * one, 80 + 40 * one, 1, 0, 0, 0, 0, 1 + one) +
          diskline(252, 0, "vda", 1000 + 100 * one, 20000 + 2048 * one, 500 + 200 * one,
                   200 + 50 * one, 4000 + 1024 * one, 300 + 100 * one, 2 * one, 10000 + 250 * one) +
          diskline(252, 1, "vda1", 900 + 100 * one, 18000 + 2048 * one, 450 + 200 * one,
                   200 + 50 * one, 4000 + 1024 * one, 300 + 100 * one, 2 * one, 9000 + 250 * one))
        w(root + "/proc/net/dev", NETHDR + netline("lo", 5000 + 999 * one, 5000 + 999 * one) +
          netline("eth0", 1000000 + 1000000 * one, 500000 + 250000 * one))
        w(root + "/proc/pressure/cpu", pressure(1.5, 1000000 + 200000 * one, 0, 0))
        w(root + "/proc/pressure/io", pressure(0.5, 500000 + 50000 * one, 0.2, 200000 + 30000 * one))
        w(root + "/proc/pressure/memory", pressure(0, 0, 0, 0))
        procs = [
            (1, "systemd", "S", 0, 50, 50, 1, 1, 3000, [(1, 100)]),
            (100, "python (main)", "R", 1, 1000 + 95 * one, 100, 3, 5000, 256000,
             [(100, 900 + 90 * one), (101, 150 + 5 * one), (102, 50)]),
            (200, "pt_data_worker", "S", 100, 500 + 30 * one, 0, 1, 5100, 64000, [(200, 500 + 30 * one)]),
            (300, "sshd", "S", 1, 10 + one, 0, 1, 100, 2000, [(300, 10 + one)]),
        ]
        for pid, comm, st, ppid, ut, stt, th, start, rss, tasks in procs:
            w(root + "/proc/%d/stat" % pid, pidstat(pid, comm, st, ppid, ut, stt, th, start, rss))
            for tid, ticks in tasks:
                w(root + "/proc/%d/task/%d/stat" % (pid, tid), pidstat(tid, comm if tid == pid else "worker-%d" % tid, st, ppid, ticks, 0, th, start, rss))
        for pid, rc, wc, rb in [(100, 10485760 * one, 1048576 * one, 2097152 * one), (200, 0, 0, 0), (1, 0, 0, 0)]:
            w(root + "/proc/%d/io" % pid, "rchar: %d\nwchar: %d\nsyscr: 0\nsyscw: 0\nread_bytes: %d\nwrite_bytes: 0\ncancelled_write_bytes: 0\n" % (rc, wc, rb))
        for dev in ("vda", "loop0"):
            w(root + "/sys/block/%s/dev" % dev, "252:0\n")
    # The same box on a kernel without PSI: no /proc/pressure.
    shutil.copytree(os.path.join(HERE, "normal", "t0", "proc"), os.path.join(HERE, "no-pressure", "t0", "proc"))
    shutil.rmtree(os.path.join(HERE, "no-pressure", "t0", "proc", "pressure"))

def cores256():
    """A 256-core box: cores 0–127 fully busy (100 user ticks each in 1 s),
    128–255 idle."""
    for snap in ("t0", "t1"):
        root = os.path.join(HERE, "cores256", snap)
        one = snap == "t1"
        cores = []
        for i in range(256):
            busy = i < 128
            cores.append((i, [10000 + 100 * one * busy, 0, 5000, 80000 + 100 * one * (not busy), 100, 0, 0, 0]))
        w(root + "/proc/stat", stat(sumcores(cores), cores, 5000000 + 400000 * one, running=130))
        w(root + "/proc/loadavg", "128.40 120.10 64.00 130/4000 99999\n")

def nvme():
    """A saturated NVMe: 50000 random 4 KiB reads in 1 s (50000 IOPS,
    195.3 MiB/s), 25000 ms of read time (await 0.5 ms), io_ticks +1010 ms
    (a little over wall time: clamped to 100 %), 64 requests in flight.
    Partitions nvme0n1p1 and nvme0n1p2 are left out."""
    for snap in ("t0", "t1"):
        root = os.path.join(HERE, "nvme-saturated", snap)
        one = snap == "t1"
        w(root + "/proc/diskstats",
          diskline(259, 0, "nvme0n1", 100000 + 50000 * one, 800000 + 400000 * one, 50000 + 25000 * one,
                   10, 80, 5, 64 * one, 200000 + 1010 * one) +
          diskline(259, 1, "nvme0n1p1", 100000 + 50000 * one, 800000 + 400000 * one, 50000 + 25000 * one,
                   10, 80, 5, 64 * one, 200000 + 1010 * one) +
          diskline(259, 2, "nvme0n1p2", 10, 80, 1, 0, 0, 0, 0, 1))
        w(root + "/sys/block/nvme0n1/dev", "259:0\n")

def backwards():
    """Counters that go backwards between t0 and t1 (a wrapped 32-bit
    diskstats counter, a re-created interface, iowait that decreases on a
    tickless kernel), then grow again normally at t2. cpu1 goes offline at t1
    and is back at t2."""
    snaps = {
        "t0": dict(c0=[100, 0, 100, 1000, 500, 0, 0, 0], c1=[100, 0, 100, 1000, 0, 0, 0, 0],
                   disk=(4294967000, 4294967000), rx=900000000, tx=800000000, some=5000000),
        "t1": dict(c0=[150, 0, 100, 1100, 450, 0, 0, 0], c1=None,
                   disk=(100, 800), rx=1000, tx=2000, some=1000),
        "t2": dict(c0=[200, 0, 100, 1150, 450, 0, 0, 0], c1=[200, 0, 100, 1050, 0, 0, 0, 0],
                   disk=(200, 1600), rx=101000, tx=52000, some=101000),
    }
    for snap, s in snaps.items():
        root = os.path.join(HERE, "backwards", snap)
        cores = [(0, s["c0"])] + ([(1, s["c1"])] if s["c1"] else [])
        w(root + "/proc/stat", stat(sumcores(cores), cores, 1000))
        w(root + "/proc/loadavg", "0.10 0.10 0.10 1/100 100\n")
        reads, sectors = s["disk"]
        w(root + "/proc/diskstats", diskline(8, 0, "sda", reads, sectors, 10, 0, 0, 0, 0, 5))
        w(root + "/sys/block/sda/dev", "8:0\n")
        w(root + "/proc/net/dev", NETHDR + netline("eth0", s["rx"], s["tx"]))
        w(root + "/proc/pressure/cpu", pressure(0, s["some"], None, 0))

def disappearing():
    """sdb is there at t0, unplugged at t1, and back at t2 with counters from
    zero: at t2 it is a new device with no baseline, never a negative rate."""
    for snap, sdb in (("t0", (5000, 40000)), ("t1", None), ("t2", (10, 80))):
        root = os.path.join(HERE, "disappearing", snap)
        text = diskline(8, 0, "sda", 100, 800, 10, 0, 0, 0, 0, 5)
        if sdb:
            text += diskline(8, 16, "sdb", sdb[0], sdb[1], 10, 0, 0, 0, 0, 5)
        w(root + "/proc/diskstats", text)
        w(root + "/sys/block/sda/dev", "8:0\n")
        w(root + "/sys/block/sdb/dev", "8:16\n")

def amd():
    """Three DRM cards: card0 an AMD MI210 at 87 % busy, 12 GiB of 64 GiB
    VRAM, 250.5 W of a 300 W cap (hwmon in µW), 65.5 °C (m°C), with a display
    connector card0-DP-1 that is not a card; card1 an Intel iGPU (skipped);
    card2 an AMD board whose driver reports no busy percent and no hwmon."""
    root = os.path.join(HERE, "amd", "sys", "class", "drm")
    dev = root + "/card0/device"
    w(dev + "/vendor", "0x1002\n")
    w(dev + "/product_name", "AMD Instinct MI210\n")
    w(dev + "/uevent", "DRIVER=amdgpu\nPCI_SLOT_NAME=0000:c1:00.0\n")
    w(dev + "/gpu_busy_percent", "87\n")
    w(dev + "/mem_busy_percent", "40\n")
    w(dev + "/mem_info_vram_used", "%d\n" % (12 << 30))
    w(dev + "/mem_info_vram_total", "%d\n" % (64 << 30))
    w(dev + "/hwmon/hwmon4/power1_average", "250500000\n")
    w(dev + "/hwmon/hwmon4/power1_cap", "300000000\n")
    w(dev + "/hwmon/hwmon4/temp1_input", "65500\n")
    w(root + "/card0-DP-1/status", "disconnected\n")
    w(root + "/card1/device/vendor", "0x8086\n")
    w(root + "/card2/device/vendor", "0x1002\n")
    w(root + "/card2/device/mem_info_vram_used", "0\n")
    w(root + "/card2/device/mem_info_vram_total", "%d\n" % (8 << 30))

for d in ("amd", "normal", "no-pressure", "cores256", "nvme-saturated", "backwards", "disappearing"):
    shutil.rmtree(os.path.join(HERE, d), ignore_errors=True)
amd(); normal(); cores256(); nvme(); backwards(); disappearing()
