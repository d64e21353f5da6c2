package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// LoadPolicy reads .memory/learning-policy.json. A missing or empty file is
// the empty policy; a file that does not parse is an error naming it.
func LoadPolicy(root string) (learn.Policy, error) {
	path := Path(root, PolicyFile)
	data, err := safefs.ReadFile(path, safefs.MaxState)
	if errors.Is(err, os.ErrNotExist) {
		return learn.Policy{}, nil
	}
	if err != nil {
		return learn.Policy{}, fmt.Errorf("read %s: %w", path, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return learn.Policy{}, nil
	}
	var p learn.Policy
	if err := json.Unmarshal(data, &p); err != nil {
		return learn.Policy{}, fmt.Errorf("parse %s: %w", path, err)
	}
	return p, nil
}

// SavePolicy atomically replaces .memory/learning-policy.json with p. Keys
// this version does not know — at the top level and inside each overlay —
// are kept from the file being replaced. The caller holds the learning lock
// (UpdatePolicy does that).
func SavePolicy(root string, p learn.Policy) error {
	path := Path(root, PolicyFile)
	doc := map[string]json.RawMessage{}
	oldOverlays := map[string]map[string]json.RawMessage{}
	if data, err := safefs.ReadFile(path, safefs.MaxState); err == nil && len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("parse %s (not replacing it): %w", path, err)
		}
		if raw, ok := doc["overlays"]; ok {
			_ = json.Unmarshal(raw, &oldOverlays)
		}
	}
	overlays := map[string]map[string]json.RawMessage{}
	for typ, o := range p.Overlays {
		m := map[string]json.RawMessage{}
		for k, v := range oldOverlays[typ] {
			m[k] = v
		}
		known, err := rawFields(o)
		if err != nil {
			return err
		}
		for k, v := range known {
			m[k] = v
		}
		overlays[typ] = m
	}
	approvals := p.Approvals
	if approvals == nil {
		approvals = []string{}
	}
	resets := p.Resets
	if resets == nil {
		resets = map[string]time.Time{}
	}
	for k, v := range map[string]any{"version": 1, "overlays": overlays, "approvals": approvals, "resets": resets} {
		if k == "version" {
			if _, ok := doc[k]; ok {
				continue
			}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %s: %w", path, err)
		}
		doc[k] = b
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return manifest.WriteFile(path, append(out, '\n'), 0o644)
}

func rawFields(v any) (map[string]json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	err = json.Unmarshal(b, &m)
	return m, err
}

// UpdatePolicy takes the learning lock, loads the policy, applies fn and
// saves the result when it differs. It returns the policy in force after.
// It must not be called while this process holds the learning lock (use
// LoadPolicy/SavePolicy there).
func UpdatePolicy(ctx context.Context, root string, timeout time.Duration, fn func(learn.Policy) (learn.Policy, error)) (learn.Policy, error) {
	if err := safefs.MkdirAll(Path(root, "")); err != nil {
		return learn.Policy{}, fmt.Errorf("create %s: %w", Path(root, ""), err)
	}
	lock, err := manifest.AcquireLock(ctx, LockPath(root), timeout)
	if err != nil {
		return learn.Policy{}, err
	}
	defer lock.Release()
	return updatePolicyLocked(root, fn)
}

func updatePolicyLocked(root string, fn func(learn.Policy) (learn.Policy, error)) (learn.Policy, error) {
	old, err := LoadPolicy(root)
	if err != nil {
		return learn.Policy{}, err
	}
	next, err := fn(old.Clone())
	if err != nil {
		return old, err
	}
	if reflect.DeepEqual(normal(old), normal(next)) {
		return old, nil
	}
	if err := SavePolicy(root, next); err != nil {
		return old, err
	}
	return next, nil
}

// normal makes nil and empty collections compare equal.
func normal(p learn.Policy) learn.Policy {
	if len(p.Overlays) == 0 {
		p.Overlays = nil
	}
	if len(p.Approvals) == 0 {
		p.Approvals = nil
	}
	if len(p.Resets) == 0 {
		p.Resets = nil
	}
	return p
}

// RefreshPolicy recomputes the overlays from the feedback events
// (learn.Overlays over learn.Tally since each type's reset) under the
// learning lock and saves the policy when it changed. Call it after
// appending feedback (reconcile, outcome record, verdict record), outside the
// learning lock; RefreshPolicyLocked is for callers already holding it.
func RefreshPolicy(ctx context.Context, root string, now time.Time, timeout time.Duration) (learn.Policy, error) {
	if _, err := os.Stat(Path(root, "")); errors.Is(err, os.ErrNotExist) {
		return learn.Policy{}, nil
	}
	lock, err := manifest.AcquireLock(ctx, LockPath(root), timeout)
	if err != nil {
		return learn.Policy{}, err
	}
	defer lock.Release()
	return RefreshPolicyLocked(root, now)
}

// RefreshPolicyLocked is RefreshPolicy for a caller holding the learning lock.
// The journal is folded from the fold snapshot (FoldFeedback), which it
// only reads.
func RefreshPolicyLocked(root string, now time.Time) (learn.Policy, error) {
	p, _, _, err := refreshPolicyLocked(root, now, false)
	return p, err
}

// RefreshPolicyFolded is RefreshPolicy that also returns the journal's
// fold as of now with the engine parameters params, and writes the fold
// snapshot: a caller that refreshes the policy and then ranks (the session
// start) reads and folds the journal once.
func RefreshPolicyFolded(ctx context.Context, root string, now time.Time, timeout time.Duration, params learn.Params) (learn.Policy, Folded, error) {
	if _, err := os.Stat(Path(root, "")); errors.Is(err, os.ErrNotExist) {
		return learn.Policy{}, Folded{Stats: map[string]learn.Stats{}, Tally: map[string]learn.TypeStats{}}, nil
	}
	lock, err := manifest.AcquireLock(ctx, LockPath(root), timeout)
	if err != nil {
		return learn.Policy{}, Folded{}, err
	}
	defer lock.Release()
	p, fd, serr, err := refreshPolicyLocked(root, now, true)
	if err != nil {
		return p, Folded{}, err
	}
	f := fd.result(now, params)
	f.SnapshotErr = serr
	return p, f, nil
}

func refreshPolicyLocked(root string, now time.Time, save bool) (learn.Policy, folding, error, error) {
	var fd folding
	var ferr error
	// The fold's snapshot is saved while the policy is computed and saved:
	// two files written and synced one after the other were about 5 ms
	// of a reconcile that recorded feedback.
	var saving sync.WaitGroup
	var serr error
	p, err := updatePolicyLocked(root, func(p learn.Policy) (learn.Policy, error) {
		fd, ferr = foldJournal(root, p.Resets)
		if ferr != nil {
			return p, ferr
		}
		if save && fd.save != nil {
			saving.Go(func() { serr = saveSnapshot(root, fd.save) })
		}
		return learn.Overlays(p, fd.tally, now), nil
	})
	saving.Wait()
	if ferr != nil {
		return learn.Policy{}, folding{}, nil, ferr
	}
	return p, fd, serr, err
}
