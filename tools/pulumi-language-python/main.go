// Command pulumi-language-python is the project's Python language host for
// the Pulumi CLI, built by scripts/install-pulumi.sh.
//
// The upstream host lives in its own Go module
// (github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3), which
// the Go module proxy reachable from this project does not serve, so the
// project builds this host instead. It speaks the LanguageRuntime gRPC
// protocol from github.com/pulumi/pulumi/sdk/v3/proto/go and uses the SDK's
// own Python toolchain helpers (sdk/v3/python/toolchain) to find the
// interpreter and virtualenv. Programs are launched through the SDK's
// pulumi-language-python-exec script; policy packs and Python plugins are
// launched through RunPlugin.
//
// Files: main.go (flags, server), host.go (the RPC methods), options.go
// (runtime options to toolchain), plugins.go (plugin discovery),
// program.go (argv, environment and exit status of a program run),
// stream.go (output streamed over gRPC).
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/logging"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/version"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
)

// flags are the command-line arguments the engine passes to a language host:
// [--logtostderr] [-v=N] [--logflow] [--tracing X] [-root=X] ... ENGINE_ADDRESS
type flags struct {
	version       bool
	verbose       int
	logToStderr   bool
	logFlow       bool
	engineAddress string
}

// isFlag reports whether arg is one of the named flags, written with one
// dash or two (-name, --name).
func isFlag(arg string, names ...string) bool {
	for _, n := range names {
		if arg == "-"+n || arg == "--"+n {
			return true
		}
	}
	return false
}

func parseFlags(argv []string) flags {
	var f flags
	var positional []string
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		switch {
		case isFlag(a, "version"):
			f.version = true
			return f
		case isFlag(a, "logtostderr"):
			f.logToStderr = true
		case isFlag(a, "logflow"):
			f.logFlow = true
		case strings.HasPrefix(a, "-v=") || strings.HasPrefix(a, "--v="):
			f.verbose, _ = strconv.Atoi(a[strings.Index(a, "=")+1:])
		case isFlag(a, "tracing", "root", "virtualenv", "toolchain", "typechecker"):
			i++ // flag with a separate value: skip it
		case strings.HasPrefix(a, "-"):
			// other flags (-root=..., --tracing=..., ...) are accepted and ignored
		default:
			positional = append(positional, a)
		}
	}
	if len(positional) > 0 {
		f.engineAddress = positional[len(positional)-1]
	}
	return f
}

func main() {
	f := parseFlags(os.Args[1:])
	if f.version {
		fmt.Println(version.Version)
		return
	}
	logging.InitLogging(f.logToStderr, f.verbose, f.logFlow)

	h := &host{engineAddress: f.engineAddress}
	cancel := make(chan bool)
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: cancel,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, h)
			return nil
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "fatal: could not start language host RPC server: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "fatal: language host RPC server stopped: %v\n", err)
		os.Exit(1)
	}
}
