package diagnose

// WarmingUp: not enough data yet. See docs/diagnosis.md, "Verdicts".
const WarmingUp Kind = 0

func init() {
	register(Situation{
		Kind:        WarmingUp,
		ID:          "warming_up",
		Title:       "Warming up",
		Tone:        ToneNeutral,
		NoRecording: "every recording starts with it: the fixture tests replay its first frames",
	})
}
