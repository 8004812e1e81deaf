package main

import (
	"fmt"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
)

// pythonOptions are the runtime options of Pulumi.yaml (runtime.options) the
// host understands: virtualenv, toolchain (pip, uv, poetry) and typechecker
// (mypy, pyright).
type pythonOptions struct {
	virtualenv  string
	toolchain   string
	typechecker string
}

func optionsOf(info *pulumirpc.ProgramInfo) pythonOptions {
	var o pythonOptions
	if info == nil || info.GetOptions() == nil {
		return o
	}
	m := info.GetOptions().AsMap()
	str := func(k string) string {
		if v, ok := m[k]; ok && v != nil {
			return fmt.Sprintf("%v", v)
		}
		return ""
	}
	o.virtualenv = str("virtualenv")
	o.toolchain = strings.ToLower(str("toolchain"))
	o.typechecker = strings.ToLower(str("typechecker"))
	return o
}

// toolchainOptions maps a program's info to the SDK's toolchain options.
func toolchainOptions(info *pulumirpc.ProgramInfo) (toolchain.PythonOptions, pythonOptions, error) {
	o := optionsOf(info)
	root, programDir := "", ""
	if info != nil {
		root, programDir = info.GetRootDirectory(), info.GetProgramDirectory()
	}
	if programDir == "" {
		programDir = root
	}
	opts := toolchain.PythonOptions{Root: root, ProgramDir: programDir, Virtualenv: o.virtualenv}
	switch o.toolchain {
	case "", "auto":
		opts.Toolchain = toolchain.Auto
	case "pip":
		opts.Toolchain = toolchain.Pip
	case "uv":
		opts.Toolchain = toolchain.Uv
	case "poetry":
		opts.Toolchain = toolchain.Poetry
	default:
		return opts, o, fmt.Errorf("unsupported python toolchain %q (expected pip, uv or poetry)", o.toolchain)
	}
	switch o.typechecker {
	case "", "none":
	case "mypy":
		opts.Typechecker = toolchain.TypeCheckerMypy
	case "pyright":
		opts.Typechecker = toolchain.TypeCheckerPyright
	default:
		return opts, o, fmt.Errorf("unsupported python typechecker %q (expected mypy or pyright)", o.typechecker)
	}
	return opts, o, nil
}

func resolveToolchain(info *pulumirpc.ProgramInfo) (toolchain.Toolchain, pythonOptions, error) {
	opts, o, err := toolchainOptions(info)
	if err != nil {
		return nil, o, err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	return tc, o, err
}
