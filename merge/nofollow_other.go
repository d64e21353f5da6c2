//go:build !unix

package merge

const noFollow = 0
