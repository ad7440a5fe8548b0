package runner_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"
)

// attackArg makes the test binary an attacker's tool, run by a .flux.yaml command of a test:
//
//	<test binary> attack takeover <socket> <ready file> <seconds>
//	    rename the runner's socket away, listen on its path, and report what connects
//	<test binary> attack dial <socket>
//	    connect to the runner's socket as a command and report what the runner answers
//
// The binary is the one the runner's sessions already execute (the runner is the test binary),
// so a session's user can run it; the report goes to stdout.
const attackArg = "attack"

func isAttack(args []string) bool { return len(args) > 2 && args[1] == attackArg }

func runAttack(args []string) int {
	switch {
	case args[0] == "takeover" && len(args) == 4:
		return takeover(args[1], args[2], args[3])
	case args[0] == "dial" && len(args) == 2:
		return dial(args[1])
	}
	fmt.Println("usage: attack takeover|dial ...")
	return 2
}

func takeover(socket, ready, seconds string) int {
	secs, _ := strconv.Atoi(seconds)
	if err := os.Rename(socket, socket+".moved"); err != nil {
		fmt.Println("rename:", errText(err))
		// Replacing it in place needs the same right on its directory; try anyway.
		_ = os.Remove(socket)
	} else {
		fmt.Println("rename: ok")
	}
	ln, err := net.Listen("unix", socket)
	_ = os.WriteFile(ready, nil, 0o644)
	if err != nil {
		fmt.Println("listen:", errText(err))
		return 0
	}
	fmt.Println("listen: ok")
	defer ln.Close()
	_ = ln.(*net.UnixListener).SetDeadline(time.Now().Add(time.Duration(secs) * time.Second))
	var got int64
	for {
		conn, err := ln.Accept()
		if err != nil {
			break
		}
		_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
		n, _ := io.Copy(io.Discard, conn)
		got += n
		_ = conn.Close()
	}
	fmt.Println("captured bytes:", got)
	return 0
}

func dial(socket string) int {
	conn, err := net.Dial("unix", socket)
	if err != nil {
		fmt.Println("dial:", errText(err))
		return 0
	}
	defer conn.Close()
	fmt.Println("dial: ok")
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	n, err := io.Copy(io.Discard, conn)
	fmt.Println("received bytes:", n, errText(err))
	return 0
}

// errText is the error without the paths of the runner, which differ from run to run.
func errText(err error) string {
	if err == nil {
		return ""
	}
	var pe *os.PathError
	var le *os.LinkError
	var oe *net.OpError
	switch {
	case errors.As(err, &pe):
		return pe.Err.Error()
	case errors.As(err, &le):
		return le.Err.Error()
	case errors.As(err, &oe):
		return oe.Err.Error()
	}
	return err.Error()
}
