package gitrepo

import (
	"os"
	"path/filepath"
	"time"

	"github.com/learnwatch/learnwatch/safefs"
)

// Stamp is what a pass notes of a worktree's git state before it reads the
// memory and compares before it writes: HEAD's text and the stat of the
// index and of index.lock. Git writes worktree files (checkout, merge,
// rebase, stash, reset, restore) while it holds index.lock and renames
// the lock over the index when it is done, so a pass whose reads straddle
// such a write — some files read before git wrote them, some after — sees
// another stamp at its end. Three lstats and one small read, no git
// process. The zero Stamp is outside git.
type Stamp struct {
	Head        string
	Index, Lock FileStamp
}

// FileStamp is the stat of one file of the git directory: whether it is
// there, its size, modification time and inode (a rename puts another
// inode in place even within one timestamp tick).
type FileStamp struct {
	Exists bool
	Size   int64
	Mtime  int64
	Ino    uint64
}

// StampOf reads the Stamp of the worktree whose git directory is gitDir
// ("" gives the zero Stamp).
func StampOf(gitDir string) Stamp {
	if gitDir == "" {
		return Stamp{}
	}
	s := Stamp{Index: fileStamp(filepath.Join(gitDir, "index")), Lock: fileStamp(filepath.Join(gitDir, "index.lock"))}
	if b, err := readSmall(filepath.Join(gitDir, "HEAD")); err == nil {
		s.Head = string(b)
	}
	return s
}

// WritingFor is how long after its last change an index.lock is taken for
// git writing the worktree. Git holds the lock for the few milliseconds
// to seconds a checkout takes — and also while `git commit` waits for its
// message in an editor, or forever when a git process was killed: a lock
// older than this no longer holds a pass back (the Stamp still catches a
// write that lands during the pass).
const WritingFor = 5 * time.Second

// Writing reports whether git may be writing the worktree at now: the
// stamp's index.lock is there and younger than WritingFor.
func (s Stamp) Writing(now time.Time) bool {
	return s.Lock.Exists && now.Sub(time.Unix(0, s.Lock.Mtime)) < WritingFor
}

func fileStamp(path string) FileStamp {
	fi, err := os.Lstat(path)
	if err != nil {
		return FileStamp{}
	}
	return FileStamp{Exists: true, Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Ino: safefs.Inode(fi)}
}
