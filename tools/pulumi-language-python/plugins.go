package main

import (
	"bytes"
	"context"
	_ "embed" // requiredPluginsScript
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/logging"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// requiredPluginsScript prints, as JSON, the pulumi-plugin.json of every
// package on sys.path that needs a resource plugin.
//
//go:embed required_plugins.py
var requiredPluginsScript string

// skipPluginsEnv names provider packages (comma-separated) installed in the
// venv that a stack never uses and that cannot be obtained here (docker, aws on
// the native stack), so the engine does not ask for them.
const skipPluginsEnv = "PULUMI_PYTHON_SKIP_PLUGINS"

type pluginJSON struct {
	Name             string `json:"name"`
	Version          string `json:"version"`
	Server           string `json:"server"`
	Parameterization *struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Value   []byte `json:"value"`
	} `json:"parameterization"`
}

// skipList parses the value of PULUMI_PYTHON_SKIP_PLUGINS.
func skipList(value string) map[string]bool {
	skip := map[string]bool{}
	for _, name := range strings.Split(value, ",") {
		if name = strings.TrimSpace(name); name != "" {
			skip[name] = true
		}
	}
	return skip
}

// packageDependencies turns the output of requiredPluginsScript into the
// engine's package dependencies, leaving out the plugins named in skip.
func packageDependencies(out []byte, skip map[string]bool) ([]*pulumirpc.PackageDependency, error) {
	var plugins []pluginJSON
	if err := json.Unmarshal(out, &plugins); err != nil {
		return nil, fmt.Errorf("parsing plugin list %q: %w", string(out), err)
	}
	deps := make([]*pulumirpc.PackageDependency, 0, len(plugins))
	for _, p := range plugins {
		if skip[p.Name] {
			logging.V(5).Infof("python host: skipping plugin %s (%s)", p.Name, skipPluginsEnv)
			continue
		}
		v := p.Version
		if v != "" && !strings.HasPrefix(v, "v") {
			v = "v" + v
		}
		dep := &pulumirpc.PackageDependency{Kind: "resource", Name: p.Name, Version: v, Server: p.Server}
		if p.Parameterization != nil {
			dep.Parameterization = &pulumirpc.PackageParameterization{
				Name:    p.Parameterization.Name,
				Version: p.Parameterization.Version,
				Value:   p.Parameterization.Value,
			}
		}
		deps = append(deps, dep)
	}
	return deps, nil
}

// pluginDependencies is the older plugin view of deps: parameterized packages
// have no plugin of their own and are left out.
func pluginDependencies(deps []*pulumirpc.PackageDependency) []*pulumirpc.PluginDependency {
	plugins := make([]*pulumirpc.PluginDependency, 0, len(deps))
	for _, d := range deps {
		if d.Parameterization != nil {
			continue
		}
		plugins = append(plugins, &pulumirpc.PluginDependency{
			Name: d.Name, Kind: d.Kind, Version: d.Version, Server: d.Server,
		})
	}
	return plugins
}

// requiredPackages runs requiredPluginsScript in the program's Python
// environment.
func requiredPackages(ctx context.Context, info *pulumirpc.ProgramInfo,
	skip map[string]bool,
) ([]*pulumirpc.PackageDependency, error) {
	tc, _, err := resolveToolchain(info)
	if err != nil {
		return nil, err
	}
	if err := tc.ValidateVenv(ctx); err != nil {
		return nil, err
	}
	cmd, err := tc.Command(ctx, "-c", requiredPluginsScript)
	if err != nil {
		return nil, err
	}
	cmd.Dir = info.GetProgramDirectory()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing pulumi plugins of the python environment (%s): %w: %s",
			cmd.Path, err, strings.TrimSpace(stderr.String()))
	}
	deps, err := packageDependencies(out, skip)
	if err != nil {
		return nil, err
	}
	logging.V(5).Infof("python host: required packages: %v", deps)
	return deps, nil
}
