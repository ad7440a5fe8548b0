package node

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runDir is the node's directory on the host's /run: its host record and the containerd shims'
// sockets (whose path must be short: a unix socket's is at most 107 bytes). Its existence says a
// node runs or ran: only one runs at a time, since the host's sysctls are shared.
const runDir = "/run/sluice-node"

// recordPath is where the host record is written before the node changes anything.
var recordPath = filepath.Join(runDir, "host.json")

// bridgeName is the CNI bridge of the pods: a name of its own, deleted on stop.
const bridgeName = "sluice0"

// cgroupRoot holds every cgroup of the node (the kubelet's cgroupRoot): removing it on stop
// removes the pods' cgroups in every hierarchy.
const cgroupRoot = "sluice-node"

// touchedSysctls are the host's settings the node's parts change: the CNI bridge (isGateway)
// sets ip_forward; the kubelet sets the panic, overcommit and keys settings (it refuses to start
// with protectKernelDefaults instead); kube-proxy would set the conntrack and route_localnet ones
// (its configuration asks it not to). Each is recorded, and put back on stop when it changed.
var touchedSysctls = []string{
	"net/ipv4/ip_forward",
	"net/ipv6/conf/all/forwarding",
	"kernel/panic",
	"kernel/panic_on_oops",
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
	"net/ipv4/conf/all/route_localnet",
	"net/netfilter/nf_conntrack_max",
	"net/netfilter/nf_conntrack_tcp_timeout_established",
	"net/netfilter/nf_conntrack_tcp_timeout_close_wait",
	"net/bridge/bridge-nf-call-iptables",
	"net/bridge/bridge-nf-call-ip6tables",
}

// hostDirs are directories the parts create at fixed places whatever their configuration:
// /var/log/containers (the kubelet's links to the pods' logs) and /var/lib/cni (the CNI
// library's cache of results); the others are defaults that the node's configuration moves
// into the state directory, watched in case a part ignores it. Those that did not exist before
// are removed on stop.
var hostDirs = []string{
	"/var/log/containers", "/var/lib/cni", "/var/log/pods", "/run/netns", "/run/containerd",
	"/var/lib/containerd", "/opt/containerd", "/run/runc", "/var/run/nri", "/var/lib/kubelet",
	"/etc/cni", "/opt/cni", "/usr/libexec/kubernetes", "/etc/kubernetes", "/var/lib/kube-proxy",
	"/run/xtables.lock",
}

// hostRecord is what the node found on the host before it started, written to recordPath so
// that the next start can undo what a crashed run left.
type hostRecord struct {
	OwnerPID   int
	OwnerStart string
	StateDir   string
	// Sysctls are the old values, by path under /proc/sys.
	Sysctls map[string]string
	// NftTables and Links are the nftables tables ("family name") and network interfaces there
	// were: new ones are the node's.
	NftTables []string
	Links     []string
	// CreatedDirs are the hostDirs that did not exist.
	CreatedDirs []string
	// ControlPlaneDirs are the temporary directories of the control plane that StartCluster
	// started (envtest's etcd data and API server certificates): after a crash, CleanStale
	// kills the processes that name them and removes them. Stop leaves the control plane to
	// Cluster.Stop.
	ControlPlaneDirs []string
}

// CleanStale undoes what a node whose process died without Stop (a killed test) left on the
// host, as its record says. It does nothing when no node ran, and fails while one runs. Start
// calls it; a test that compares the host before and after a node calls it first.
func CleanStale() error {
	if _, err := os.Stat(runDir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	old, err := readRecord()
	if err != nil {
		// The process died before it recorded anything, so it changed nothing.
		return os.RemoveAll(runDir)
	}
	if processAlive(old.OwnerPID, old.OwnerStart) {
		return fmt.Errorf("a node is running already, started by process %d with its state in %s (%s)", old.OwnerPID, old.StateDir, recordPath)
	}
	var errs []error
	for _, d := range old.ControlPlaneDirs {
		errs = append(errs, killProcessesNaming(d), os.RemoveAll(d))
	}
	errs = append(errs, old.undo())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("undoing what a node that did not stop (process %d, state %s) left on the host: %w", old.OwnerPID, old.StateDir, err)
	}
	return nil
}

// claimHost undoes what a crashed node left, then records the host's state for stateDir's node.
// It fails while another node runs.
func claimHost(stateDir string, controlPlaneDirs []string) (*hostRecord, error) {
	if err := CleanStale(); err != nil {
		return nil, err
	}
	if err := os.Mkdir(runDir, 0o700); err != nil {
		return nil, err
	}
	r := &hostRecord{
		OwnerPID: os.Getpid(), OwnerStart: processStart(os.Getpid()), StateDir: stateDir,
		Sysctls: map[string]string{}, ControlPlaneDirs: controlPlaneDirs,
	}
	for _, s := range touchedSysctls {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", s)); err == nil {
			r.Sysctls[s] = strings.TrimSpace(string(v))
		}
	}
	var err error
	if r.NftTables, err = nftTables(); err != nil {
		os.RemoveAll(runDir)
		return nil, err
	}
	if r.Links, err = links(); err != nil {
		os.RemoveAll(runDir)
		return nil, err
	}
	for _, d := range hostDirs {
		if _, err := os.Lstat(d); errors.Is(err, os.ErrNotExist) {
			r.CreatedDirs = append(r.CreatedDirs, d)
		}
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err == nil {
		err = os.WriteFile(recordPath, data, 0o600)
	}
	if err != nil {
		os.RemoveAll(runDir)
		return nil, err
	}
	return r, nil
}

func readRecord() (*hostRecord, error) {
	data, err := os.ReadFile(recordPath)
	if err != nil {
		return nil, err
	}
	var r hostRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", recordPath, err)
	}
	return &r, nil
}

// undo puts the host back as the record found it: it kills what the node left running, unmounts
// what it mounted, removes its cgroups, network interfaces, nftables tables and directories,
// restores the sysctls and last removes runDir. It goes on after an error, so that one leftover
// does not keep the others, and can run again.
func (r *hostRecord) undo() error {
	var errs []error
	if err := killNodeProcesses(r.StateDir); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, unmountUnder(r.StateDir, runDir))
	errs = append(errs, removeCgroups())
	if now, err := links(); err == nil {
		for _, l := range now {
			if !slices.Contains(r.Links, l) && (l == bridgeName || strings.HasPrefix(l, "veth")) {
				if out, err := exec.Command("ip", "link", "delete", l).CombinedOutput(); err != nil && linkExists(l) {
					errs = append(errs, fmt.Errorf("ip link delete %s: %v: %s", l, err, out))
				}
			}
		}
	} else {
		errs = append(errs, err)
	}
	if now, err := nftTables(); err == nil {
		for _, t := range now {
			if !slices.Contains(r.NftTables, t) {
				args := append([]string{"delete", "table"}, strings.Fields(t)...)
				if out, err := exec.Command("nft", args...).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("nft delete table %s: %v: %s", t, err, out))
				}
			}
		}
	} else {
		errs = append(errs, err)
	}
	for s, old := range r.Sysctls {
		p := filepath.Join("/proc/sys", s)
		if v, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(v)) != old {
			if err := os.WriteFile(p, []byte(old), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("restoring %s to %s: %w", s, old, err))
			}
		}
	}
	for _, d := range r.CreatedDirs {
		errs = append(errs, os.RemoveAll(d))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return os.RemoveAll(runDir)
}

// processStart is a process's start time (field 22 of /proc/<pid>/stat), which tells it from a
// later process given the same id.
func processStart(pid int) string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

func processAlive(pid int, start string) bool {
	return pid > 0 && start != "" && processStart(pid) == start
}

// killProcessesNaming kills, with SIGKILL, every process whose command line names dir, and waits
// until they are gone.
func killProcessesNaming(dir string) error {
	return killMatching(func(_, cmdline string) bool { return strings.Contains(cmdline, dir) })
}

// killNodeProcesses kills, with SIGKILL, every process in the node's cgroups (the containers)
// and every one whose command line names the state directory or runDir (the daemons and the
// containerd shims, which leave the process tree of the node), and waits until they are gone.
func killNodeProcesses(stateDir string) error {
	return killMatching(func(cgroup, cmdline string) bool {
		return strings.Contains(cgroup, ":/"+cgroupRoot+"/") || strings.Contains(cgroup, ":/"+cgroupRoot+"\n") ||
			(stateDir != "" && strings.Contains(cmdline, stateDir)) || strings.Contains(cmdline, runDir)
	})
}

// killMatching kills, with SIGKILL, every process (but this one) whose /proc cgroup and cmdline
// match, until none is left.
func killMatching(match func(cgroup, cmdline string) bool) error {
	find := func() []int {
		var pids []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			cg, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if match(string(cg), string(cmdline)) {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		pids := find()
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of the node still running 15s after SIGKILL: %v", pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mountPoints lists the mount points under any of dirs, deepest (latest mounted) first.
func mountPoints(dirs ...string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var points []string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMount(fields[4])
		for _, d := range dirs {
			if d != "" && (p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/")) {
				points = append(points, p)
				break
			}
		}
	}
	slices.Reverse(points)
	return points, scanner.Err()
}

// unescapeMount decodes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountUnder unmounts everything mounted under dirs: overlay snapshots, network namespaces,
// the kubelet's bind mount of its root directory and the pods' volumes.
func unmountUnder(dirs ...string) error {
	for attempt := 0; ; attempt++ {
		points, err := mountPoints(dirs...)
		if err != nil || len(points) == 0 {
			return err
		}
		if attempt == 5 {
			return fmt.Errorf("still mounted: %s", strings.Join(points, ", "))
		}
		for _, p := range points {
			if err := syscall.Unmount(p, 0); err != nil {
				_ = syscall.Unmount(p, syscall.MNT_DETACH)
			}
		}
	}
}

// cgroupHierarchies are the mounted cgroup hierarchies (v1 controllers, the named systemd
// one and cgroup2, which these hosts mount at /sys/fs/cgroup/unified).
func cgroupHierarchies() []string {
	var out []string
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join("/sys/fs/cgroup", e.Name()))
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		out = []string{"/sys/fs/cgroup"} // cgroup v2 only
	}
	return out
}

// createCgroupRoot makes the kubelet's cgroupRoot in every hierarchy (it must exist). A new v1
// cpuset starts with no CPUs and memory nodes: it gets its parent's.
func createCgroupRoot() error {
	for _, h := range cgroupHierarchies() {
		dir := filepath.Join(h, cgroupRoot)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return fmt.Errorf("%s: %w", filepath.Join(dir, f), err)
				}
			}
		}
	}
	return nil
}

// removeCgroups removes cgroupRoot and every cgroup below it, deepest first, in every hierarchy.
func removeCgroups() error {
	var errs []error
	for _, h := range cgroupHierarchies() {
		root := filepath.Join(h, cgroupRoot)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			var err error
			// A cgroup whose last process just exited may be busy for a moment.
			for i := 0; i < 50; i++ {
				if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// nftTables lists the nftables tables as "family name".
func nftTables() ([]string, error) {
	out, err := exec.Command("nft", "-j", "list", "tables").Output()
	if err != nil {
		return nil, fmt.Errorf("nft list tables: %w", err)
	}
	var doc struct {
		Nftables []struct {
			Table *struct{ Family, Name string } `json:"table"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("nft list tables: %w", err)
	}
	var tables []string
	for _, e := range doc.Nftables {
		if e.Table != nil {
			tables = append(tables, e.Table.Family+" "+e.Table.Name)
		}
	}
	return tables, nil
}

// links lists the network interfaces of the host's namespace.
func links() ([]string, error) {
	entries, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, nil
}

func linkExists(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}
