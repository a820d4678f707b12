package sample

// HostSync is one site of the job's code that makes the host wait for
// the GPU inside the step, as the hook counted it
// (python/gpuwatch_hook/_syncs.py): loss.item() at train.py:87, once a
// step.
type HostSync struct {
	// Site is the job's file and line that made the calls
	// ("train.py:87"): printable, at most MaxHostSyncSite bytes.
	Site string `json:"site"`
	// Call is what was called: one of HostSyncCalls.
	Call string `json:"call"`
	// PerStep is the calls per step there, over the steps the hook
	// counted (0.1: one step in ten).
	PerStep float64 `json:"per_step" check:"0,1e6"`
	// SecondsPerStep is the time per step the host spent inside those
	// calls (on a GPU, waiting for its queue to drain); nil when not sent.
	SecondsPerStep *float64 `json:"seconds_per_step,omitempty" check:"0,1e6"`
}

// Bounds on the hook's syncs as a frame holds them.
const (
	MaxHostSyncs    = 16
	MaxHostSyncSite = 256
)

// HostSyncCalls are the calls the hook counts, as it names them: the
// tensor's methods (repr: print(t), str(t); format: f"{t}"; bool: an
// `if t:`), torch.cuda.synchronize, and grad_scaler: torch's GradScaler
// reading whether the gradients overflowed (an .item() inside its step()).
var HostSyncCalls = []string{"item", "cpu", "tolist", "numpy", "repr", "format", "float", "int", "bool", "synchronize", "grad_scaler"}

// HostSyncWords is how a call reads in the job's code: "loss.item()" for
// item reads ".item()"; "print(tensor)" for repr.
func HostSyncWords(call string) string {
	switch call {
	case "repr":
		return "print(tensor) (its repr)"
	case "format":
		return "f\"{tensor}\" (its format)"
	case "float", "int", "bool":
		return call + "(tensor)"
	case "synchronize":
		return "torch.cuda.synchronize()"
	case "grad_scaler":
		return "scaler.step() (torch's GradScaler reads whether the gradients overflowed)"
	}
	return "." + call + "()"
}
