package sample

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Check brings a frame read from outside (a recording, a file written by
// hand) within the ranges a live probe gives, so that no view, rule or
// report meets a number it cannot draw: a wait share of 1.5, a negative
// wait, NaN, a rank list of a million entries. It returns what it changed,
// one note per number or list, in the frame's JSON names
// ("ranks[2].wait_share 1.5: outside 0–1, dropped"). A frame a probe made
// comes back unchanged with no note.
//
// The ranges, by field (a `check:"lo,hi"` tag where the name does not say):
//   - a float that is not finite is dropped (a pointer) or set to 0;
//   - …Pct is 0–100, …Share 0–1 (a profile's flat and cum too), any other
//     float 0–1e15 (rates, sizes, times: none is negative);
//   - an int is 0–2^31 (an int64, a size in bytes, 0–2^62);
//   - a pointer out of range is dropped (nil), a value clamped;
//   - a list is cut to its `check:"max=N"` (4096 where untagged), a map to
//     1024 entries, a string to 4096 bytes (on a rune boundary).
//
// Unsigned counters are left as they are: JSON cannot make them negative.
func (f *Frame) Check() []string {
	c := checker{}
	c.walk(reflect.ValueOf(f).Elem(), "", "")
	return c.notes
}

// Bounds of Check where a field's tag does not set its own.
const (
	checkMaxFloat  = 1e15
	checkMaxInt    = 1 << 31
	checkMaxList   = 4096
	checkMaxMap    = 1024
	checkMaxString = 4096
	checkMaxNotes  = 64 // per frame: a hostile frame's notes are bounded too
)

type checker struct {
	notes   []string
	dropped int // notes past checkMaxNotes
}

func (c *checker) note(path, format string, args ...any) {
	if len(c.notes) < checkMaxNotes-1 {
		c.notes = append(c.notes, path+" "+fmt.Sprintf(format, args...))
		return
	}
	c.dropped++
	c.notes = append(c.notes[:checkMaxNotes-1], fmt.Sprintf("and %d more numbers or lists out of range", c.dropped))
}

var timeType = reflect.TypeOf(time.Time{})

// walk checks v (at path, the field's tag in tag) and everything in it.
func (c *checker) walk(v reflect.Value, path, tag string) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		switch e := v.Elem(); e.Kind() {
		case reflect.Float64, reflect.Int, reflect.Int64:
			if !c.number(e, path, tag, true) {
				v.Set(reflect.Zero(v.Type()))
			}
		default:
			c.walk(e, path, tag)
		}
	case reflect.Struct:
		if v.Type() == timeType {
			return
		}
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "-" || !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			p := name
			if path != "" {
				p = path + "." + name
			}
			c.walk(v.Field(i), p, checkTag(sf))
		}
	case reflect.Slice:
		limit := checkMaxList
		if n, ok := strings.CutPrefix(tag, "max="); ok {
			limit, _ = strconv.Atoi(n)
		}
		if v.Len() > limit {
			c.note(path, "has %d entries: cut to %d", v.Len(), limit)
			v.Set(v.Slice(0, limit))
		}
		for i := range v.Len() {
			c.walk(v.Index(i), path+"["+strconv.Itoa(i)+"]", "")
		}
	case reflect.Map:
		c.walkMap(v, path, tag)
	case reflect.String:
		if len(v.String()) > checkMaxString {
			c.note(path, "is %d bytes long: cut to %d", len(v.String()), checkMaxString)
			v.SetString(cutString(v.String()))
		}
	case reflect.Float64, reflect.Int, reflect.Int64:
		c.number(v, path, tag, false)
	}
}

// walkMap cuts a map to checkMaxMap entries and its strings to
// checkMaxString bytes, and drops each number outside its range.
func (c *checker) walkMap(v reflect.Value, path, tag string) {
	if v.Len() > checkMaxMap {
		c.note(path, "has %d entries: cut to %d", v.Len(), checkMaxMap)
		n := 0
		for _, k := range v.MapKeys() {
			if n++; n > checkMaxMap {
				v.SetMapIndex(k, reflect.Value{})
			}
		}
	}
	iter := v.MapRange()
	var out []reflect.Value // numbers outside the range, dropped after the walk
	for iter.Next() {
		switch s := iter.Value(); s.Kind() {
		case reflect.String:
			if len(s.String()) > checkMaxString {
				v.SetMapIndex(iter.Key(), reflect.ValueOf(cutString(s.String())))
			}
		case reflect.Float64:
			// A recording's peak of 1e308 overflowed the report's
			// means to +Inf (a review): each value is held to the
			// map's range, and dropped out of it.
			lo, hi := checkRange(path, tag, reflect.Float64)
			if x := s.Float(); !(x >= lo && x <= hi) { // NaN too
				key := iter.Key().String() // the recording's: bounded in the note
				if len(key) > checkMaxString {
					key = cutString(key)
				}
				c.note(path+"."+key, "%s: outside %s–%s, dropped", strconv.FormatFloat(x, 'g', 6, 64), checkNum(lo), checkNum(hi))
				out = append(out, iter.Key())
			}
		}
	}
	for _, k := range out {
		v.SetMapIndex(k, reflect.Value{})
	}
}

// number checks one float or int against its range; dropping says the
// caller drops it (a pointer) when it is out, else it is clamped (or set
// to 0 when not finite). It reports whether the number stays.
func (c *checker) number(v reflect.Value, path, tag string, dropping bool) bool {
	lo, hi := checkRange(path, tag, v.Kind())
	var x float64
	if v.CanInt() {
		x = float64(v.Int())
	} else {
		x = v.Float()
	}
	finite := !math.IsNaN(x) && !math.IsInf(x, 0)
	if finite && x >= lo && x <= hi {
		return true
	}
	shown := strconv.FormatFloat(x, 'g', 6, 64)
	switch {
	case dropping:
		c.note(path, "%s: outside %s–%s, dropped", shown, checkNum(lo), checkNum(hi))
		return false
	case !finite:
		c.note(path, "%s: not a number, set to 0", shown)
		x = 0
	default:
		c.note(path, "%s: outside %s–%s, clamped", shown, checkNum(lo), checkNum(hi))
		x = min(hi, max(lo, x))
	}
	if v.CanInt() {
		v.SetInt(int64(x))
	} else {
		v.SetFloat(x)
	}
	return true
}

// checkRange is a number's range: its tag's, else by its name.
func checkRange(path, tag string, k reflect.Kind) (lo, hi float64) {
	if a, b, ok := strings.Cut(tag, ","); ok {
		lo, _ = strconv.ParseFloat(a, 64)
		hi, _ = strconv.ParseFloat(b, 64)
		return lo, hi
	}
	name := path[strings.LastIndexByte(path, '.')+1:]
	switch {
	case k == reflect.Int:
		return 0, checkMaxInt
	case k == reflect.Int64:
		return 0, 1 << 62 // sizes in bytes
	case strings.HasSuffix(name, "_pct"):
		return 0, 100
	case strings.HasSuffix(name, "share") || name == "flat" || name == "cum":
		return 0, 1
	}
	return 0, checkMaxFloat
}

// checkNum writes a range's bound: whole numbers in full up to 2^31, the
// rest as %g.
func checkNum(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) <= checkMaxInt {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

func checkTag(sf reflect.StructField) string { return sf.Tag.Get("check") }

// cutString cuts s to checkMaxString bytes on a rune boundary.
func cutString(s string) string {
	n := checkMaxString
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
