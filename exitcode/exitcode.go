// Package exitcode maps learnwatch errors to the process exit codes of
// DESIGN.md §7: 0 success, 1 a check found problems, 2 bad usage or bad
// input, 3 an I/O or lock failure.
package exitcode

import (
	"errors"
	"fmt"
)

// Exit codes.
const (
	OK       = 0
	Problems = 1
	BadInput = 2
	IO       = 3
)

// Error carries an exit code alongside the error it wraps.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Wrap attaches code to err. A nil err stays nil.
func Wrap(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Bad returns a bad-input error (exit 2) with a formatted message.
func Bad(format string, args ...any) error {
	return &Error{Code: BadInput, Err: fmt.Errorf(format, args...)}
}

// Of returns the exit code for err: the code of the outermost *Error in its
// chain, IO for any other error, OK for nil.
func Of(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return IO
}
