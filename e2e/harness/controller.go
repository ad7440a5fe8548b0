package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// FluxSourceController is Flux's source-controller, built from the module proxy by `make
// flux-source-controller` for the side-by-side benchmarks. It takes the storage flags of
// Sluice's, and its kubeconfig from KUBECONFIG.
const FluxSourceController = "flux-source-controller"

// Controllers are the binaries `make build` puts in bin/.
var Controllers = []string{"source-controller", "gating-controller", "resourceset-controller", "manifest-generator"}

// Controller is a running controller process.
type Controller struct {
	Name        string
	MetricsAddr string
	HealthAddr  string
	// StorageAddr is the artifact server of the source-controller.
	StorageAddr string
	LogPath     string

	// bin and args are the program and its whole command line, kept for Restart; env is added
	// to the environment of the harness.
	bin  string
	args []string
	env  []string
	// healthURL and healthClient, when set, replace WaitReady's plain-HTTP /readyz probe (the
	// kube-controller-manager serves /healthz over HTTPS only).
	healthURL    string
	healthClient *http.Client

	mu   sync.Mutex
	proc *process
	// starts counts the processes started, the first one included.
	starts int
}

// process is one run of the controller's binary.
type process struct {
	cmd *exec.Cmd
	// exited is closed when the process has exited; err is then its exit error.
	exited chan struct{}
	err    error
}

// StartController runs bin/<name> against the cluster of kubeconfig on free loopback ports, with
// its logs in dir/<name>.log (and, for the source-controller, its artifacts in dir/storage; for
// the manifest-generator, its checkouts in dir/generator).
// extraArgs are appended to the common flags and to the controller's DefaultArgs (deploy/'s
// secure defaults), so they may override them.
func StartController(binDir, name, kubeconfig, dir string, extraArgs ...string) (*Controller, error) {
	return startController(binDir, name, kubeconfig, dir, nil, extraArgs...)
}

// StartReplica is StartController for one replica among several of a controller: its pod's
// name (POD_NAME, its identity among the replicas) is identity.
func StartReplica(binDir, name, identity, kubeconfig, dir string, extraArgs ...string) (*Controller, error) {
	return startController(binDir, name, kubeconfig, dir, []string{"POD_NAME=" + identity}, extraArgs...)
}

func startController(binDir, name, kubeconfig, dir string, env []string, extraArgs ...string) (*Controller, error) {
	bin := filepath.Join(binDir, name)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s not found: run `make build`", bin)
	}
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		Name:        name,
		MetricsAddr: fmt.Sprintf("127.0.0.1:%d", ports[0]),
		HealthAddr:  fmt.Sprintf("127.0.0.1:%d", ports[1]),
		LogPath:     filepath.Join(dir, name+".log"),
		env:         env,
	}
	if name == "source-controller" || name == FluxSourceController {
		// Flux's refuses a storage path that does not exist yet.
		if err := os.MkdirAll(filepath.Join(dir, "storage"), 0o755); err != nil {
			return nil, err
		}
		c.StorageAddr = fmt.Sprintf("127.0.0.1:%d", ports[2])
		extraArgs = append([]string{
			"--storage-path=" + filepath.Join(dir, "storage"),
			"--storage-addr=" + c.StorageAddr,
			"--storage-adv-addr=" + c.StorageAddr,
		}, extraArgs...)
	}
	if name == "manifest-generator" {
		// Its source checkouts; generators find kustomize and helm next to the controllers.
		extraArgs = append([]string{
			"--storage-path=" + filepath.Join(dir, "generator"),
			"--generator-path=" + filepath.Dir(bin) + ":/usr/local/bin:/usr/bin:/bin",
		}, extraArgs...)
	}
	extraArgs = append(append([]string(nil), DefaultArgs[name]...), extraArgs...)
	c.bin = bin
	common := []string{"--kubeconfig=" + kubeconfig}
	if strings.HasPrefix(name, "flux-") {
		// Flux's controllers have no such flag: controller-runtime reads KUBECONFIG.
		common, c.env = nil, append(c.env, "KUBECONFIG="+kubeconfig)
	}
	c.args = append(append(common,
		"--metrics-addr="+c.MetricsAddr,
		"--health-addr="+c.HealthAddr,
	), extraArgs...)
	// extraArgs may move an address: the fields say where the process really listens.
	for flag, field := range map[string]*string{"metrics-addr": &c.MetricsAddr, "health-addr": &c.HealthAddr, "storage-addr": &c.StorageAddr} {
		if v, ok := lastFlag(c.args, flag); ok && *field != "" {
			*field = v
		}
	}
	if err := c.start(os.O_CREATE | os.O_TRUNC | os.O_WRONLY); err != nil {
		return nil, err
	}
	return c, nil
}

// lastFlag returns the value the command line gives --name last ("--name=v" or "--name v"),
// the one pflag keeps.
func lastFlag(args []string, name string) (string, bool) {
	value, found := "", false
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "--"+name+"="):
			value, found = strings.TrimPrefix(a, "--"+name+"="), true
		case a == "--"+name && i+1 < len(args):
			value, found = args[i+1], true
		}
	}
	return value, found
}

// start runs the process with c.args, its output going to the log file opened with flag.
func (c *Controller) start(flag int) error {
	logFile, err := os.OpenFile(c.LogPath, flag, 0o644)
	if err != nil {
		return err
	}
	p := &process{cmd: exec.Command(c.bin, c.args...), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.Env = append(append(os.Environ(), "RUNTIME_NAMESPACE="+RuntimeNamespace), c.env...)
	// Its own process group: a Ctrl-C in the terminal reaches the sandbox or test only, which
	// then stops the controller with one SIGTERM (a second signal makes a controller exit 1).
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	go func() {
		p.err = p.cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	c.mu.Lock()
	c.proc = p
	c.starts++
	c.mu.Unlock()
	return nil
}

// current returns the current process.
func (c *Controller) current() *process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc
}

// Args returns the command line the controller runs with (without the program).
func (c *Controller) Args() []string { return append([]string(nil), c.args...) }

// Pid is the process id of the current process.
func (c *Controller) Pid() int { return c.current().cmd.Process.Pid }

// Starts is how many processes were started: 1, plus one per Restart.
func (c *Controller) Starts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.starts
}

// Exited reports whether the current process has exited.
func (c *Controller) Exited() bool {
	select {
	case <-c.current().exited:
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL (no graceful shutdown: in-flight reconciles, leader leases and half-written
// files stay as they are, as when a node dies or the OOM killer strikes) and waits until the
// process is gone.
func (c *Controller) Kill() error {
	p := c.current()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s (pid %d) still running 30s after SIGKILL", c.Name, p.cmd.Process.Pid)
	}
}

// Restart starts the controller again, after it exited (Kill or Stop), with the same command
// line: the same ports, kubeconfig, storage and flags. Its log is appended to the same file,
// after a line saying so. Wait for it with WaitReady.
func (c *Controller) Restart() error {
	if !c.Exited() {
		return fmt.Errorf("%s (pid %d) is still running: Kill or Stop it first", c.Name, c.Pid())
	}
	f, err := os.OpenFile(c.LogPath, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "{\"level\":\"info\",\"ts\":%q,\"msg\":\"harness: restarting %s\"}\n", time.Now().UTC().Format(time.RFC3339Nano), c.Name)
	f.Close()
	if err != nil {
		return err
	}
	return c.start(os.O_APPEND | os.O_WRONLY)
}

// LogTail returns the last n lines of the controller's log (all of it when n <= 0).
func (c *Controller) LogTail(n int) string {
	return tail(c.LogPath, n, nil)
}

// LogTailMatching returns the last n lines of the controller's log that contain one of the
// substrings, e.g. the namespaces of one test.
func (c *Controller) LogTailMatching(n int, substrings ...string) string {
	return tail(c.LogPath, n, substrings)
}

func tail(path string, n int, substrings []string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(substrings) > 0 {
		var kept []string
		for _, l := range lines {
			for _, s := range substrings {
				if strings.Contains(l, s) {
					kept = append(kept, l)
					break
				}
			}
		}
		lines = kept
	}
	if n > 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WaitReady waits until /readyz answers 200 and, for the source-controller, its artifact
// server accepts connections (it starts listening after /readyz answers); it fails when the
// process exits first.
func (c *Controller) WaitReady(ctx context.Context) error {
	url := "http://" + c.HealthAddr + "/readyz"
	if c.healthURL != "" {
		url = c.healthURL
	}
	p := c.current()
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready (%v); see %s, which ends with:\n%s", c.Name, p.err, c.LogPath, logTail(c.LogPath))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w; see %s", c.Name, ctx.Err(), c.LogPath)
		case <-time.After(100 * time.Millisecond):
		}
		if c.ready(url) {
			return nil
		}
	}
}

func (c *Controller) ready(url string) bool {
	client := http.DefaultClient
	if c.healthClient != nil {
		client = c.healthClient
	}
	resp, err := client.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	if c.StorageAddr != "" {
		conn, err := net.DialTimeout("tcp", c.StorageAddr, time.Second)
		if err != nil {
			return false
		}
		conn.Close()
	}
	return true
}

// Stop sends SIGTERM and waits for the process to exit, killing it after timeout. It returns the
// process's exit error (nil for a clean exit).
func (c *Controller) Stop(timeout time.Duration) error {
	p := c.current()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.exited:
		return p.err
	case <-time.After(timeout):
		// SIGQUIT has the Go runtime write every goroutine's stack to the log: what held the
		// process up.
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
		}
		return fmt.Errorf("%s did not stop within %s of SIGTERM (its log, with every goroutine's stack, is kept at %s); the stages of its stop:\n%s\nits goroutines in the project's code and in controller-runtime's:\n%s",
			c.Name, timeout, keepLog(c.LogPath), stopStages(c.LogPath), projectGoroutines(c.LogPath))
	}
}

// keepLog copies the log at path out of the test's temporary directory, which the test removes,
// and returns where.
func keepLog(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	f, err := os.CreateTemp("", "sluice-stop-*.log")
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return err.Error()
	}
	return f.Name()
}

// stopStages returns the lines of the log at path in which controller-runtime's manager says
// what it stops and waits for: the last one names what the stop waited on.
func stopStages(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "Stopping and waiting") || strings.Contains(l, "Wait completed") || strings.Contains(l, "waiting for all workers") ||
			strings.Contains(l, "All workers finished") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// projectGoroutines returns the stacks, of the goroutine dump that ends the log at path, that
// run the project's code: the reconciles or servers a stop waited for.
func projectGoroutines(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	dump := string(data)
	if i := strings.LastIndex(dump, "SIGQUIT: quit"); i >= 0 {
		dump = dump[i:]
	}
	var kept []string
	for _, g := range strings.Split(dump, "\n\n") {
		if strings.HasPrefix(g, "goroutine ") && (strings.Contains(g, "github.com/sluice-gitops/sluice/") || strings.Contains(g, "sigs.k8s.io/controller-runtime/")) {
			kept = append(kept, g)
		}
	}
	return strings.Join(kept, "\n\n")
}

// FreePorts returns n loopback ports free at the time of the call, never one it returned
// before in this process. They are taken below the kernel's ephemeral range (from which
// bind(":0") and every outgoing connection get their ports), starting at a random point, so
// that between this call and the controller's own bind (its artifact server binds a second or
// so after start) neither another controller of the system nor a client connection takes them.
func FreePorts(n int) ([]int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	low, high := portRange()
	span := high - low
	start := rand.IntN(span)
	var ports []int
	for i := 0; i < span && len(ports) < n; i++ {
		port := low + (start+i)%span
		if handedOut[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		handedOut[port] = true
		ports = append(ports, port)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("no %d free loopback ports in %d-%d", n, low, high)
	}
	return ports, nil
}

var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{}
)

// portRange is where FreePorts looks: the 12,000 ports below the ephemeral range of
// /proc/sys/net/ipv4/ip_local_port_range (32768-60999 by default on Linux).
func portRange() (int, int) {
	high := 32768
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(data)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 13000 {
				high = v
			}
		}
	}
	return high - 12000, high
}

// logTail is the end of the log at path (its last 2 KiB), for an error that the log explains
// and that outlives the test's temporary directory.
func logTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(data) > 2048 {
		data = data[len(data)-2048:]
	}
	return string(data)
}
