package merge

import (
	"bytes"
	"slices"
)

// maxDiffCells bounds the line-matching table of one three-way text merge
// (lines of base × lines of a side); past it the part is treated as one
// block, so hostile input cannot make a merge quadratic.
const maxDiffCells = 4 << 20

// mergeLines merges three versions of one part of a text file line by line,
// the way diff3 does: runs of lines that base and both sides share are kept,
// a run one side changed takes that side's version, a run both changed alike
// is kept once, and a run both changed differently becomes a conflict — the
// two versions between git's markers. ok is false when any run conflicted.
func mergeLines(o, a, b []byte, labels Labels) (out []byte, ok bool) {
	switch {
	case bytes.Equal(a, o):
		return b, true
	case bytes.Equal(b, o), bytes.Equal(a, b):
		return a, true
	}
	lo, la, lb := splitLines(o), splitLines(a), splitLines(b)
	if len(lo)*max(len(la), len(lb)) > maxDiffCells {
		return conflictBlock(a, b, labels), false
	}
	ma, mb := matchLines(lo, la), matchLines(lo, lb)
	var res [][]byte
	ok = true
	i, ja, jb := 0, 0, 0
	for {
		if i < len(lo) && ma[i] == ja && mb[i] == jb {
			res = append(res, lo[i])
			i, ja, jb = i+1, ja+1, jb+1
			continue
		}
		k := i
		for k < len(lo) && (ma[k] < 0 || mb[k] < 0) {
			k++
		}
		ea, eb := len(la), len(lb)
		if k < len(lo) {
			ea, eb = ma[k], mb[k]
		}
		co, ca, cb := lo[i:k], la[ja:ea], lb[jb:eb]
		switch {
		case equalLines(ca, co):
			res = append(res, cb...)
		case equalLines(cb, co), equalLines(ca, cb):
			res = append(res, ca...)
		default:
			ok = false
			res = append(res, conflictBlock(bytes.Join(ca, []byte("\n")), bytes.Join(cb, []byte("\n")), labels))
		}
		if k >= len(lo) {
			break
		}
		i, ja, jb = k, ea, eb
	}
	return bytes.Join(res, []byte("\n")), ok
}

func splitLines(b []byte) [][]byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.Split(b, []byte("\n"))
}

func equalLines(x, y [][]byte) bool { return slices.EqualFunc(x, y, bytes.Equal) }

// matchLines returns, for each line of o, the index of the line of x it is
// paired with in a longest common subsequence, or -1.
func matchLines(o, x [][]byte) []int {
	n, m := len(o), len(x)
	// l[i][j]: LCS length of o[i:] and x[j:].
	l := make([][]int32, n+1)
	for i := range l {
		l[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if bytes.Equal(o[i], x[j]) {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	match := make([]int, n)
	for i := range match {
		match[i] = -1
	}
	for i, j := 0, 0; i < n && j < m; {
		switch {
		case bytes.Equal(o[i], x[j]):
			match[i] = j
			i, j = i+1, j+1
		case l[i+1][j] >= l[i][j+1]:
			i++
		default:
			j++
		}
	}
	return match
}
