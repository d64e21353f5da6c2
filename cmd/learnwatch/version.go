package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version (module version, VCS revision and time of the build)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			info := buildVersion()
			return a.emit(info, func(w io.Writer) { fmt.Fprintln(w, "learnwatch", versionString()) })
		},
	}

}

// versionInfo is what the Go toolchain recorded about this build.
type versionInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

// buildVersion reads the module version and the VCS stamp from the build
// info (`go build`/`go install` in a git checkout records them).
func buildVersion() versionInfo {
	v := versionInfo{Version: "(devel)"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// versionString is the one-line form: "v1.2.0", or
// "(devel) 7ce349f1c2d0 2026-11-23T16:09:00Z (modified)".
func versionString() string {
	v := buildVersion()
	s := v.Version
	if v.Revision != "" {
		rev := v.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += " " + rev
		if v.Time != "" {
			s += " " + v.Time
		}
		if v.Modified {
			s += " (modified)"
		}
	}
	return s
}
