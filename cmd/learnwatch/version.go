package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() {
	register(func(a *app) *cobra.Command {
		return &cobra.Command{
			Use:   "version",
			Short: "Print the version",
			Args:  cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error {
				v := "devel"
				if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
					v = bi.Main.Version
				}
				return a.emit(map[string]string{"version": v}, func(w io.Writer) { fmt.Fprintln(w, "learnwatch", v) })
			},
		}
	})
}
