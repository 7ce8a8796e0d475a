// Package suggest finds the name a mistyped one was probably meant to be,
// for "did you mean" in errors: config keys and values, flag values, and
// tables and namespaces a catalog knows.
package suggest

import "strings"

// Closest returns the name of names closest to name (compared without
// case), when it is close enough to be a typo of it: at most 2 edits,
// and fewer than half its length; "" when none is.
func Closest(name string, names []string) string {
	best, bestD := "", -1
	for _, n := range names {
		if d := Distance(strings.ToLower(name), strings.ToLower(n)); bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" || bestD > 2 || bestD*2 > len(best) {
		return ""
	}
	return best
}

// Distance is the Levenshtein distance of a and b in bytes. No module in
// go.mod exports one, and it is a dozen lines.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
