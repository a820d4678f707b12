package sample

// History is a ring buffer of the most recent Frames, of fixed capacity, so
// memory does not grow with run time. It is not safe for concurrent use; the
// one goroutine that owns it (the dashboard's model) adds and reads. The
// Diagnoser keeps its own window.
type History struct {
	buf   []*Frame
	start int // index of the oldest frame
	n     int // number of frames held
}

// NewHistory returns a History that holds at most capacity frames.
// A capacity below 1 is taken as 1.
func NewHistory(capacity int) *History {
	if capacity < 1 {
		capacity = 1
	}
	return &History{buf: make([]*Frame, capacity)}
}

// Add appends f, dropping the oldest frame when the buffer is full.
func (h *History) Add(f *Frame) {
	if h.n < len(h.buf) {
		h.buf[(h.start+h.n)%len(h.buf)] = f
		h.n++
		return
	}
	h.buf[h.start] = f
	h.start = (h.start + 1) % len(h.buf)
}

// Len is the number of frames held.
func (h *History) Len() int { return h.n }

// At returns the i-th frame, oldest first (0 ≤ i < Len). It panics on an
// index out of range, like a slice.
func (h *History) At(i int) *Frame {
	if i < 0 || i >= h.n {
		panic("sample: History index out of range")
	}
	return h.buf[(h.start+i)%len(h.buf)]
}

// Last appends the newest k frames (fewer if fewer are held), oldest first,
// to dst and returns it. Passing a reused dst avoids allocation.
func (h *History) Last(dst []*Frame, k int) []*Frame {
	if k > h.n {
		k = h.n
	}
	for i := h.n - k; i < h.n; i++ {
		dst = append(dst, h.At(i))
	}
	return dst
}
