// Command forker is a test MCP server that, like `npx` starting `node`,
// spawns a long-lived grandchild of Patchbay at start: itself again with
// -idle, which just sleeps. Its tool "pids" returns "<self> <grandchild>"
// as host pids (read through /proc, so they are right even when the server
// is pid 1 of its own PID namespace), so tests can check that neither
// outlives Patchbay. With FORKER_SETSID=1 the grandchild also leaves the
// process group, like a daemon.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// hostPid is this process's pid as /proc (mounted by the host) names it;
// os.Getpid would say 1 inside a PID namespace.
func hostPid() int {
	if s, err := os.Readlink("/proc/self"); err == nil {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	return os.Getpid()
}

func main() {
	idle := flag.Bool("idle", false, "print the host pid, then sleep forever")
	flag.Parse()
	if *idle {
		fmt.Println(hostPid())
		// Not select{}: the runtime kills a program whose goroutines are
		// all blocked forever.
		for {
			time.Sleep(time.Hour)
		}
	}

	cmd := exec.Command(os.Args[0], "-idle")
	cmd.Stderr = os.Stderr
	if os.Getenv("FORKER_SETSID") == "1" {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "forker:", err)
		os.Exit(1)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "forker: spawn grandchild:", err)
		os.Exit(1)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, "forker: read grandchild pid:", err)
		os.Exit(1)
	}
	grandchild, _ := strconv.Atoi(line[:len(line)-1])
	fmt.Fprintf(os.Stderr, "forker: pid %d grandchild %d\n", hostPid(), grandchild)

	s := server.NewMCPServer("forker", "1")
	s.AddTool(mcp.NewTool("pids"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(fmt.Sprintf("%d %d", hostPid(), grandchild)), nil
	})
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
