//go:build unix

package staleness

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// localIdentity names the directories paths by device and inode: what a
// cache file copied from another clone (a cloned repository may carry a
// committed .memory/.cache) cannot know. "" when one cannot be read.
func localIdentity(paths ...string) string {
	var b strings.Builder
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return ""
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return ""
		}
		fmt.Fprintf(&b, "%d:%d;", uint64(st.Dev), uint64(st.Ino))
	}
	return b.String()
}
