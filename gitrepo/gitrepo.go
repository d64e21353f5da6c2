// Package gitrepo owns finding the git repository that holds a directory
// and opening it for reading: the work tree's top, its git directory (a
// linked worktree's own, with the common directory behind it) and go-git's
// object, reference and index storage over them. It reads; it never writes
// to a repository, runs git or reaches the network.
//
// go-git's own PlainOpen refuses a repository whose configuration names an
// extension it does not implement — and it spells the ones it allows in a
// case it never matches, so `extensions.worktreeConfig` (which `git
// sparse-checkout init` and per-worktree configuration set) and
// `extensions.partialClone` (every `git clone --filter=...`) made it refuse
// ordinary repositories. Refused, learnwatch behaved as outside git and
// counted every artifact a checkout took away as the person's deletion.
// Open accepts the extensions that change nothing about reading objects,
// references and the index (readable) and refuses, with an error naming
// it, any other: a SHA-256 object format, reftable references, or one
// git itself would refuse.
package gitrepo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/learnwatch/learnwatch/safefs"
)

// ErrNotExist is returned when no git repository holds the directory.
var ErrNotExist = errors.New("not in a git repository")

// UnreadableError is a git repository that exists but that go-git cannot
// read correctly: its format version or an extension it names.
type UnreadableError struct {
	GitDir string
	Reason string
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("git repository %s cannot be read: %s", e.GitDir, e.Reason)
}

// readable lists the repository extensions (lower case, as git compares
// them) under which go-git reads objects, references and the index
// correctly, and whether git honours each in a format-0 repository:
//
//   - noop, noop-v1: change nothing (git's own tests of the format);
//   - worktreeconfig: configuration read from config.worktree too; nothing
//     read here comes from configuration;
//   - partialclone: objects git has not fetched are missing; a missing
//     object is "not there" to every caller (what a checkout put in the
//     work tree was fetched to do it);
//   - preciousobjects: forbids deleting objects; nothing here deletes;
//   - relativeworktrees: a linked worktree's .git and gitdir files hold
//     relative paths, which Open resolves.
//
// objectformat and refstorage are readable with the values go-git reads
// (sha1 and files, the defaults); any other value is not.
var readable = map[string]bool{
	"noop":              true,
	"noop-v1":           false,
	"worktreeconfig":    true,
	"partialclone":      true,
	"preciousobjects":   true,
	"relativeworktrees": false,
}

// v1Only lists the extensions git knows and refuses in a format-0
// repository (besides readable's); git ignores an unknown extension
// there.
var v1Only = map[string]bool{"objectformat": true, "compatobjectformat": true, "refstorage": true}

// defaults are the values of extensions that name go-git's own formats.
var defaults = map[string]string{"objectformat": "sha1", "refstorage": "files"}

// Extension is one `extensions.NAME = VALUE` of a repository's
// configuration.
type Extension struct{ Name, Value string }

// Repo is an opened repository.
type Repo struct {
	// Storer is go-git's storage of the repository's objects, references
	// and index (a linked worktree's index and HEAD, the common directory's
	// objects and references).
	Storer *filesystem.Storage
	// Top is the work tree's top directory; GitDir the work tree's own
	// git directory (`.git`, or `.git/worktrees/NAME` for a linked
	// worktree: its HEAD and index); CommonDir the directory it shares
	// with the repository's other worktrees (objects, references,
	// `info/exclude`), GitDir itself for the main worktree.
	Top, GitDir, CommonDir string
}

// Options tune Open.
type Options struct {
	// Up looks for the repository in the directory's parents too, as git
	// does from a subdirectory; without it the directory must be the top.
	Up bool
	// ObjectCache bounds go-git's cache of decoded objects, in bytes
	// (0: go-git's default, 96 MiB).
	ObjectCache int
}

// gitFileLimit bounds the `.git` file and the `commondir` file read.
const gitFileLimit = 64 << 10

// Open finds and opens the repository holding dir.
func Open(dir string, o Options) (*Repo, error) {
	top, gitDir, err := locate(dir, o.Up)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(gitDir)
	if err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s names git directory %s, which is not one", ErrNotExist, filepath.Join(top, ".git"), gitDir)
	}
	common, err := commonDir(gitDir)
	if err != nil {
		return nil, err
	}
	var commonFS billy.Filesystem
	if common != "" {
		commonFS = osfs.New(common)
	}
	objects := cache.NewObjectLRUDefault()
	if o.ObjectCache > 0 {
		objects = cache.NewObjectLRU(cache.FileSize(o.ObjectCache))
	}
	s := filesystem.NewStorage(dotgit.NewRepositoryFilesystem(osfs.New(gitDir), commonFS), objects)
	if _, err := s.Reference(plumbing.HEAD); err != nil {
		if errors.Is(err, plumbing.ErrReferenceNotFound) {
			return nil, fmt.Errorf("%w: %s has no HEAD", ErrNotExist, gitDir)
		}
		return nil, fmt.Errorf("git repository %s: read HEAD: %w", gitDir, err)
	}
	cfg, err := s.Config()
	if err != nil {
		return nil, fmt.Errorf("git repository %s: read config: %w", gitDir, err)
	}
	// The raw values: go-git's parsed Core.RepositoryFormatVersion is
	// empty for any version but 1.
	var version string
	var exts []Extension
	if cfg.Raw != nil {
		version = strings.TrimSpace(cfg.Raw.Section("core").Options.Get("repositoryformatversion"))
		if cfg.Raw.HasSection("extensions") {
			for _, opt := range cfg.Raw.Section("extensions").Options {
				exts = append(exts, Extension{opt.Key, opt.Value})
			}
		}
	}
	if reason := unreadable(version, exts); reason != "" {
		return nil, &UnreadableError{GitDir: gitDir, Reason: reason}
	}
	r := &Repo{Storer: s, Top: top, GitDir: gitDir, CommonDir: gitDir}
	if common != "" {
		r.CommonDir = common
	}
	return r, nil
}

// GitDir returns the git directory of the work tree holding dir (its
// nearest parent with a `.git`): `.git` itself, or the directory a `.git`
// file names (a linked worktree's own, where git keeps that worktree's
// HEAD, index and the state of a rebase or merge under way). It is what
// `git rev-parse --git-dir` answers there without GIT_DIR, found with a
// few stats and no git process; ErrNotExist outside git.
func GitDir(dir string) (string, error) {
	_, gitDir, err := locate(dir, true)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(filepath.Join(gitDir, "HEAD")); err != nil || fi.IsDir() {
		return "", fmt.Errorf("%w: %s has no HEAD", ErrNotExist, gitDir)
	}
	return gitDir, nil
}

// unreadable says why a repository of this format version with these
// extensions cannot be read, "" when it can. Git's rules: format 1 honours
// every extension and refuses one it does not know; format 0 honours only
// those that predate the format version, refuses the newer ones it knows
// and ignores the others; a later format is not git's yet.
func unreadable(version string, extensions []Extension) string {
	v1 := false
	switch version {
	case "", "0":
	case "1":
		v1 = true
	default:
		return fmt.Sprintf("core.repositoryformatversion %q is not one git reads", version)
	}
	var refused []string
	for _, e := range extensions {
		name, value := strings.ToLower(e.Name), strings.ToLower(strings.TrimSpace(e.Value))
		inV0, known := readable[name]
		switch {
		case !v1 && known && !inV0, !v1 && v1Only[name]:
			refused = append(refused, "extensions."+name+" in a format-0 repository (git refuses it too)")
		case !v1 && !known:
			// Git ignores it in format 0.
		case known:
		case defaults[name] != "" && value == defaults[name]:
		case defaults[name] != "":
			refused = append(refused, fmt.Sprintf("extensions.%s = %s", name, value))
		default:
			refused = append(refused, "extensions."+name+" (unknown)")
		}
	}
	if len(refused) == 0 {
		return ""
	}
	slices.Sort(refused)
	return strings.Join(slices.Compact(refused), ", ") + ": go-git cannot read such a repository"
}

// locate returns the work tree's top holding dir (dir itself, or with up
// its nearest parent with a `.git`) and the git directory its `.git` names.
func locate(dir string, up bool) (top, gitDir string, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	top, dot, isDir, err := find(abs, up)
	if err != nil {
		return "", "", err
	}
	if isDir {
		return top, dot, nil
	}
	gitDir, err = resolveDotGit(top, dot)
	return top, gitDir, err
}

// find returns the directory holding `.git` (dir, or with up its nearest
// parent that has one), the path of that `.git` and whether it is a
// directory (else a file naming the git directory).
func find(dir string, up bool) (top, dot string, isDir bool, err error) {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() && up {
		dir = filepath.Dir(dir)
	}
	for {
		dot = filepath.Join(dir, ".git")
		fi, err := os.Stat(dot)
		if err == nil {
			return dir, dot, fi.IsDir(), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", "", false, fmt.Errorf("git repository at %s: %w", dot, err)
		}
		parent := filepath.Dir(dir)
		if !up || parent == dir {
			return "", "", false, fmt.Errorf("%w: %s", ErrNotExist, dir)
		}
		dir = parent
	}
}

// resolveDotGit returns the git directory a `.git` file names: the path on
// its "gitdir: " line (a linked worktree, a submodule), relative to top.
func resolveDotGit(top, dot string) (string, error) {
	b, err := readSmall(dot)
	if err != nil {
		return "", err
	}
	dir, err := ParseGitFile(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w", dot, err)
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(top, dir)
	}
	return filepath.Clean(dir), nil
}

// ParseGitFile returns the git directory a `.git` file names: the text
// after "gitdir: " on its first line, without surrounding spaces.
func ParseGitFile(b []byte) (string, error) {
	line, _, _ := strings.Cut(string(b), "\n")
	rest, ok := strings.CutPrefix(line, "gitdir: ")
	if !ok {
		return "", errors.New(`a .git file must start with "gitdir: "`)
	}
	dir := strings.TrimSpace(rest)
	if dir == "" || strings.ContainsRune(dir, 0) {
		return "", errors.New("the .git file names no git directory")
	}
	return dir, nil
}

// commonDir returns the directory a linked worktree's git directory shares
// objects and references with (its `commondir` file, relative to gitDir),
// "" when gitDir is a repository's own.
func commonDir(gitDir string) (string, error) {
	name := filepath.Join(gitDir, "commondir")
	b, err := readSmall(name)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	dir := strings.TrimSpace(string(b))
	if dir == "" {
		return "", nil
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(gitDir, dir)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: %s names %s, which is not a directory", ErrNotExist, name, dir)
	}
	return filepath.Clean(dir), nil
}

// readSmall reads a regular file of at most gitFileLimit bytes (a cloned
// repository is untrusted: its .git may be a FIFO that would block the
// read, or a device). Like git, it follows a symlink.
func readSmall(name string) ([]byte, error) {
	return safefs.ReadFollowing(name, gitFileLimit)
}

// Prefix returns path (absolute) relative to the work tree's top, in
// git's slash form with a trailing slash ("sub/dir/"), "" for the top
// itself; an error when path is not inside the work tree. One side may be
// reached through a symlink (/tmp → /private/tmp).
func (r *Repo) Prefix(path string) (string, error) {
	rel, err := filepath.Rel(r.Top, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		t, err1 := filepath.EvalSymlinks(r.Top)
		p, err2 := filepath.EvalSymlinks(path)
		if err1 == nil && err2 == nil {
			rel, err = filepath.Rel(t, p)
		}
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "", fmt.Errorf("%s is not inside its git worktree %s", path, r.Top)
		}
	}
	if rel == "." {
		return "", nil
	}
	return filepath.ToSlash(rel) + "/", nil
}

// Head is HEAD resolved to its commit's reference.
func (r *Repo) Head() (*plumbing.Reference, error) {
	return storer.ResolveReference(r.Storer, plumbing.HEAD)
}

// Reference returns the reference name, resolved to its target when
// resolved is set.
func (r *Repo) Reference(name plumbing.ReferenceName, resolved bool) (*plumbing.Reference, error) {
	if resolved {
		return storer.ResolveReference(r.Storer, name)
	}
	return r.Storer.Reference(name)
}

// References iterates over every reference.
func (r *Repo) References() (storer.ReferenceIter, error) { return r.Storer.IterReferences() }

// CommitObject returns the commit h.
func (r *Repo) CommitObject(h plumbing.Hash) (*object.Commit, error) {
	return object.GetCommit(r.Storer, h)
}

// TreeObject returns the tree h.
func (r *Repo) TreeObject(h plumbing.Hash) (*object.Tree, error) {
	return object.GetTree(r.Storer, h)
}

// BlobObject returns the blob h.
func (r *Repo) BlobObject(h plumbing.Hash) (*object.Blob, error) {
	return object.GetBlob(r.Storer, h)
}

// Index decodes the worktree's index.
func (r *Repo) Index() (*index.Index, error) {
	idx, err := r.Storer.Index()
	return idx, IndexErr(err)
}

// IndexErr names what an index decode error most likely means: an index
// extension go-git does not implement, which git writes for a sparse index
// (`index.sparse`) or a split index (`core.splitIndex`).
func IndexErr(err error) error {
	if errors.Is(err, index.ErrUnknownExtension) {
		return fmt.Errorf("%w: a sparse index (index.sparse) or a split index (core.splitIndex), which go-git cannot read", err)
	}
	return err
}

// Sparse reports whether the worktree has a sparse-checkout definition:
// files outside it are in the index with the skip-worktree bit and not in
// the work tree, because git left them out.
func (r *Repo) Sparse() bool {
	_, err := os.Lstat(filepath.Join(r.GitDir, "info", "sparse-checkout"))
	return err == nil
}
