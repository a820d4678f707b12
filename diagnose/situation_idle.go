package diagnose

// Idle: nothing runs on the accelerator or the loader. See docs/diagnosis.md, "Verdicts".
const Idle Kind = 7

func init() {
	register(Situation{
		Kind:        Idle,
		ID:          "idle",
		Title:       "Idle: nothing is running",
		Tone:        ToneNeutral,
		NoRecording: "no recording yet: the tests build idle windows from frames (classify_test.go)",
	})
}
