package heal

import (
	"context"

	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/render"
)

// renderAfter renders ready observations with the state reconcile just
// wrote, still under the same lock.
func renderAfter(ctx context.Context, st *State, p manifest.Paths, opts Options) ([]string, []string, error) {
	rs, err := render.Apply(ctx, &render.State{Paths: p, Log: st.Log, Manifest: st.Manifest, Usage: st.Usage},
		render.Options{Now: opts.Now, LockTimeout: opts.LockTimeout, Hold: opts.Hold})
	var out []string
	for _, r := range rs.Rendered {
		out = append(out, r.Path)
	}
	return out, rs.Wrote, err
}
