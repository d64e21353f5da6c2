// Package safefs owns every file access under a repository's memory
// directory (.memory/). A cloned repository is untrusted input, so the
// rules are:
//
//   - The memory directory is the nearest ancestor of a path named .memory.
//     It and every directory below it on the way to the file (such as
//     .memory/knowledge) must be a real directory: each component is
//     checked with Lstat, and a symlink anywhere is refused with an error
//     naming it. The repository root above .memory is the caller's and is
//     not checked.
//   - Every file is opened with O_NOFOLLOW (and O_NONBLOCK, so a FIFO never
//     blocks) and must be a regular file once open; a symlink, FIFO, device
//     or directory is refused — never read, written, removed or backed up.
//   - Every read has a size cap (the Max* constants); a larger file is
//     refused, never read whole.
//   - Appends open O_APPEND|O_NOFOLLOW and create a missing file with
//     O_CREATE|O_EXCL|O_NOFOLLOW. Whole-file writes go through the atomic
//     writer (a temp file created O_EXCL, renamed over the name; rename
//     replaces a name and never writes through it). CreateExclusive creates
//     a new file that must not exist at all.
//
// Refusals are *RefusedError values; IsRefused tells them apart from
// ordinary I/O errors. A missing file reports an error for which
// errors.Is(err, fs.ErrNotExist) holds, as with package os.
//
// The checks are made from the path alone, not against a concurrent local
// attacker: they close the symlinks and special files a repository can
// carry, not races with another process of the same user.
package safefs
