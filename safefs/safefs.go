package safefs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Size caps on reads. A file larger than its cap is refused.
const (
	MaxConfig    = 1 << 20   // learnwatch.yaml, the kept stamp, the agent's settings
	MaxState     = 32 << 20  // the manifest, usage file, policy, watch state, citation offsets, backups
	MaxJournal   = 256 << 20 // the learning log and the append-only journals
	MaxKnowledge = 16 << 20  // one knowledge (ADR/PF) or rendered Markdown file
	MaxSmall     = 4 << 10   // lock owner and pid files
)

// MemoryDirName is the directory whose subtree the checks cover.
const MemoryDirName = ".memory"

// RefusedError reports a path that is not followed or not opened: a
// symlink, a file that is not regular, or one over its size cap.
type RefusedError struct {
	Path   string
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refused %s: %s", e.Path, e.Reason)
}

// IsRefused reports whether err is (or wraps) a *RefusedError.
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

// memoryDir returns the nearest ancestor of path (or path itself) named
// .memory, or "".
func memoryDir(path string) string {
	p := filepath.Clean(path)
	for {
		if filepath.Base(p) == MemoryDirName {
			return p
		}
		parent := filepath.Dir(p)
		if parent == p {
			return ""
		}
		p = parent
	}
}

// CheckDir verifies that dir and every component from the memory directory
// down to it is a real directory or does not exist yet (everything below a
// missing component is missing too). A symlink or other non-directory is
// refused. A dir outside any memory directory is not checked: callers
// handle those paths themselves (the repository-root resolver of package
// manifest, the agent settings check of package hooks).
func CheckDir(dir string) error {
	dir = filepath.Clean(dir)
	mem := memoryDir(dir)
	if mem == "" {
		return nil
	}
	comps := []string{dir}
	for p := dir; p != mem; {
		p = filepath.Dir(p)
		comps = append(comps, p)
	}
	for i := len(comps) - 1; i >= 0; i-- {
		err := checkDirComponent(comps[i])
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func checkDirComponent(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &RefusedError{Path: p, Reason: "is a symlink; learnwatch does not follow symlinks in the memory directory"}
	case !fi.IsDir():
		return &RefusedError{Path: p, Reason: "is not a directory (" + kind(fi.Mode()) + ")"}
	}
	return nil
}

// MkdirAll creates dir and its missing parents inside the memory directory,
// refusing any existing component that is not a real directory.
func MkdirAll(dir string) error {
	if err := CheckDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create directory %s: %w", dir, err)
	}
	// Re-check: MkdirAll follows a symlink that appeared meanwhile.
	return CheckDir(dir)
}

// kind names a non-regular file mode for messages.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}

// refuseOpenErr turns the errno of an O_NOFOLLOW open of a symlink (ELOOP
// on Linux, EMLINK/EFTYPE elsewhere) into a refusal; other errors pass.
func refuseOpenErr(path string, err error) error {
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
		return &RefusedError{Path: path, Reason: "is " + kind(fi.Mode()) + ", not a regular file"}
	}
	return err
}

// NoFollow is the flag of an open that must not follow a symlink as its
// last component nor block on a FIFO (0 where the flags do not exist), for
// a package opening a file no function here opens the way it needs: the
// files under .git the hooks and the merge driver read and append to.
const NoFollow = noFollow

// checkOpen verifies that an open file is regular.
func checkOpen(f *os.File, path string) (fs.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &RefusedError{Path: path, Reason: "is " + kind(fi.Mode()) + ", not a regular file"}
	}
	return fi, nil
}

// Open opens path for reading: the memory directory chain is checked, the
// open does not follow a symlink or block on a FIFO, and the file must be
// regular. The descriptor is returned in blocking mode semantics for a
// regular file (O_NONBLOCK has no effect on regular files).
func Open(path string) (*os.File, error) {
	if err := CheckDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, refuseOpenErr(path, err)
	}
	if _, err := checkOpen(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile reads path whole, refusing it when it is larger than max bytes.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadOpen(f, path, max)
}

// ReadFollowing reads path whole, like ReadFile, for a file outside the
// memory directory that may be reached through a symlink as git reaches it
// (a symlinked .git file, a merge driver's temporary files): the open does
// not block on a FIFO, the file must be regular once open, and it is
// refused over max bytes.
func ReadFollowing(path string, max int64) ([]byte, error) {
	f, err := OpenFollowing(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadOpen(f, path, max)
}

// OpenFollowing opens path for reading as ReadFollowing does, for a reader
// that streams it (a file of the working tree whose lines are counted):
// the open does not block on a FIFO and the file must be regular once
// open. A FIFO where a repository file was expected hung the staleness
// pass in open(2), where no signal could stop it.
func OpenFollowing(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	if _, err := checkOpen(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadOpen reads the open file f (at path) whole, refusing it over max
// bytes.
func ReadOpen(f *os.File, path string, max int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, TooLarge(path, fi.Size(), max)
	}
	// One allocation of the size the file has (plus room to see it grow)
	// instead of io.ReadAll's doublings: the log and the journals are
	// megabytes.
	data := make([]byte, 0, min(fi.Size(), max)+512)
	for int64(len(data)) <= max {
		if len(data) == cap(data) {
			data = slices.Grow(data, 64<<10)
		}
		end := min(int64(cap(data)), max+1)
		n, err := f.Read(data[len(data):end])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
	}
	if int64(len(data)) > max {
		return nil, GrewTooLarge(path, max)
	}
	return data, nil
}

// TooLarge is the refusal of a file at path of size bytes, over max.
func TooLarge(path string, size, max int64) error {
	return &RefusedError{Path: path, Reason: fmt.Sprintf("is %d bytes, over the %d-byte limit", size, max)}
}

// GrewTooLarge is the refusal of a file at path that grew over max bytes
// while it was read.
func GrewTooLarge(path string, max int64) error {
	return &RefusedError{Path: path, Reason: fmt.Sprintf("grew over the %d-byte limit while read", max)}
}

// Lstat returns the file's own information after checking the memory
// directory chain above it.
func Lstat(path string) (fs.FileInfo, error) {
	if err := CheckDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	return os.Lstat(path)
}

// CheckRegular reports nil when path is a regular file or missing, and a
// refusal otherwise (a symlink, FIFO, device or directory).
func CheckRegular(path string) error {
	fi, err := Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &RefusedError{Path: path, Reason: "is " + kind(fi.Mode()) + ", not a regular file"}
	}
	return nil
}

// Remove removes path if it is a regular file; a missing file is not an
// error, anything else is refused and left in place.
func Remove(path string) error {
	fi, err := Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &RefusedError{Path: path, Reason: "is " + kind(fi.Mode()) + "; not removed"}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// OpenAppend opens path for appending, creating it when missing with
// O_EXCL. Neither open follows a symlink; the file must be regular.
func OpenAppend(path string) (*os.File, error) {
	if err := MkdirAll(filepath.Dir(path)); err != nil {
		return nil, err
	}
	for i := 0; ; i++ {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|noFollow, 0)
		if errors.Is(err, fs.ErrNotExist) {
			f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL|noFollow, 0o644)
			if errors.Is(err, fs.ErrExist) && i < 3 {
				continue // created by another writer meanwhile: open it
			}
		}
		if err != nil {
			return nil, refuseOpenErr(path, err)
		}
		if _, err := checkOpen(f, path); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
}

// CreateExclusive creates path with data; it fails when path exists in any
// form (a file, a symlink, even a dangling one).
func CreateExclusive(path string, data []byte, perm fs.FileMode) error {
	if err := MkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// OpenLockFile opens (creating when missing) a file that is locked while
// open, such as the watcher's pid file, for reading and writing. It never
// truncates and never follows a symlink; the file must be regular.
func OpenLockFile(path string) (*os.File, error) {
	if err := MkdirAll(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|noFollow, 0o644)
	if err != nil {
		return nil, refuseOpenErr(path, err)
	}
	if _, err := checkOpen(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenOwned opens a file named by the agent rather than found in the
// repository, such as a session transcript: the last component is not
// followed, a FIFO never blocks the open, and the file must be a regular
// file owned by the current user (where ownership is known).
func OpenOwned(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, refuseOpenErr(path, err)
	}
	fi, err := checkOpen(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	if !ownedByMe(fi) {
		f.Close()
		return nil, &RefusedError{Path: path, Reason: "is not owned by the current user"}
	}
	return f, nil
}
