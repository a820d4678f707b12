package sample

import "testing"

// TestPacingProfileIsOfTheVerdictsRank: with several ranks, the frame's
// profile counts for the diagnosis where it is the pacing rank's or of a
// rank that waits about as much; another rank's (rank 0's while a
// straggler paces) does not.
func TestPacingProfileIsOfTheVerdictsRank(t *testing.T) {
	wait := func(v float64) *float64 { return &v }
	frame := func(profiled string, w0, w1 float64) *Frame {
		return &Frame{
			Profile: &Profile{Source: profiled},
			Ranks: []Rank{
				{Rank: 0, URL: "http://127.0.0.1:6061", Connected: true, WaitShare: wait(w0)},
				{Rank: 1, URL: "http://127.0.0.1:6062", Connected: true, WaitShare: wait(w1), Pacing: true},
			},
		}
	}
	for _, c := range []struct {
		name    string
		f       *Frame
		counted bool
	}{
		{"the pacing rank's", frame("http://127.0.0.1:6062", 0.05, 0.85), true},
		{"a quick rank's beside a straggler", frame("http://127.0.0.1:6061", 0.05, 0.85), false},
		{"a rank waiting as much", frame("http://127.0.0.1:6061", 0.80, 0.85), true},
		{"a rank the frame does not list", frame("http://127.0.0.1:6063", 0.80, 0.85), false},
		{"one loader", &Frame{Profile: &Profile{Source: "http://127.0.0.1:6061"}}, true},
	} {
		if got := c.f.PacingProfile() != nil; got != c.counted {
			t.Errorf("%s: counted %v, want %v", c.name, got, c.counted)
		}
	}
	var none Frame
	if none.PacingProfile() != nil {
		t.Error("a frame with no profile has one")
	}
}

// TestProfiledRankNamesWhoseProfileItIs: with several ranks the views
// name the rank a profile was taken of (a review: the headless line
// showed rank 0's profile beside a verdict on rank 1 and said nothing).
func TestProfiledRankNamesWhoseProfileItIs(t *testing.T) {
	f := &Frame{
		Profile: &Profile{Source: "http://127.0.0.1:6061"},
		Ranks: []Rank{
			{Rank: 0, URL: "http://127.0.0.1:6061", Connected: true},
			{Rank: 1, URL: "http://127.0.0.1:6062", Connected: true, Pacing: true},
		},
	}
	if r := f.ProfiledRank(); r == nil || r.Rank != 0 {
		t.Errorf("profiled rank %+v, want rank 0", r)
	}
	f.Profile.Source = "http://127.0.0.1:6063"
	if r := f.ProfiledRank(); r != nil {
		t.Errorf("a source no rank has read as rank %d", r.Rank)
	}
	one := &Frame{Profile: &Profile{Source: "http://127.0.0.1:6061"}, Ranks: f.Ranks[:1]}
	if r := one.ProfiledRank(); r != nil {
		t.Errorf("one loader's profile named rank %d", r.Rank)
	}
}
