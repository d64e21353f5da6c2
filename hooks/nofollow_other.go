//go:build !unix

package hooks

const noFollow = 0
