package main

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The import table is docs/architecture.md's "Packages, and who may import
// whom": a row per package (its first cell names it, `main` for the
// module's root), and its last cell the packages of the module it may
// import. The table is the source; this file only reads it. A last cell is
// a comma list of the table's own names, read up to a " — " (what follows
// is why) and without its parentheses (what they say is why too); "nothing"
// and "—" draw no arrow, "everything below" draws one to every package but
// main.
const importDoc = "docs/architecture.md"

// importTableHead is the header row the table starts at.
const importTableHead = "| package | owns | may import (inside the module) |"

// importRow is what one package may import.
type importRow struct {
	line int             // where the row is in importDoc
	any  bool            // "everything below"
	may  map[string]bool // the names it may import
}

// TestImportTable parses every non-test Go file of the module (all build
// tags alike: a file for another OS imports what it imports) and fails on
// a package the table does not name, and on an import (an arrow, package A
// imports package B) that the table does not draw. Test files are left
// out: the table is the shape of what is built, and the tests' own helpers
// (internal/fixture, internal/testnet, probes/internal/probetest) are rows
// that say so.
func TestImportTable(t *testing.T) {
	f, err := os.Open(importDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table, err := readImportTable(f)
	if err != nil {
		t.Fatalf("%s: %v", importDoc, err)
	}
	imports := moduleImports(t, ".")
	if len(imports) < 20 {
		t.Fatalf("read %d packages: the walk missed the module", len(imports))
	}
	for _, e := range checkImports(table, imports) {
		t.Error(e)
	}
}

// TestImportTableSeesADrift: a package the table does not name, an arrow it
// does not draw, and a name in a last cell that is no row's all fail; a
// reason after " — " and in parentheses draws nothing, "nothing" and "—"
// draw nothing, "everything below" draws every arrow but to main.
func TestImportTableSeesADrift(t *testing.T) {
	doc := "intro\n\n" + importTableHead + "\n|---|---|---|\n" +
		"| `main` (`main.go`) | the program | cli |\n" +
		"| `cli/` | commands | everything below |\n" +
		"| `a/`, `b/` | two at once | sample (its types) — never c: it is slow |\n" +
		"| `sample/` | the frame | nothing (it is the bottom) |\n" +
		"| `c/` | not Go | — |\n" +
		"| `d/` | a typo | sample, nope |\n" +
		"\nafter the table\n"
	table, err := readImportTable(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string][]string{
		"main":   {"cli"},
		"cli":    {"a", "c", "sample", "main"},
		"a":      {"sample", "c"},
		"b":      {"sample"},
		"sample": nil,
		"c":      {"sample"},
		"e":      nil,
	}
	got := checkImports(table, imports)
	want := []string{
		"a imports c: docs/architecture.md's import table does not draw that arrow (add c to a's row, line 7, or remove the import)",
		"c imports sample: docs/architecture.md's import table does not draw that arrow (add sample to c's row, line 9, or remove the import)",
		"cli imports main: docs/architecture.md's import table does not draw that arrow (add main to cli's row, line 6, or remove the import)",
		"d's row (line 10) may import nope, which no row names",
		"e: docs/architecture.md's import table does not name this package (add its row)",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	parens     = regexp.MustCompile(`\([^)]*\)`)
)

// readImportTable reads the table from its header row to the first line
// that is no row: each package's name to what it may import.
func readImportTable(r io.Reader) (map[string]importRow, error) {
	table := map[string]importRow{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	in, n := false, 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if !in {
			in = line == importTableHead
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		if strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) < 3 {
			return nil, fmt.Errorf("line %d: a row of %d cells, want 3", n, len(cells))
		}
		row := readMayImport(cells[len(cells)-1])
		row.line = n
		for _, name := range rowNames(cells[0]) {
			if _, dup := table[name]; dup {
				return nil, fmt.Errorf("line %d: %s has a row already", n, name)
			}
			table[name] = row
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(table) == 0 {
		return nil, fmt.Errorf("no table under %q", importTableHead)
	}
	return table, nil
}

// rowNames are the packages a first cell names: each backticked name but a
// file's, without its trailing slash.
func rowNames(cell string) []string {
	var names []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		if !strings.HasSuffix(m[1], ".go") {
			names = append(names, strings.TrimSuffix(m[1], "/"))
		}
	}
	return names
}

// readMayImport reads a last cell.
func readMayImport(cell string) importRow {
	row := importRow{may: map[string]bool{}}
	cell, _, _ = strings.Cut(cell, " — ")
	for _, name := range strings.Split(parens.ReplaceAllString(cell, ""), ",") {
		switch name = strings.TrimSpace(name); name {
		case "", "nothing", "—":
		case "everything below":
			row.any = true
		default:
			row.may[name] = true
		}
	}
	return row
}

// checkImports says, sorted, each package the table does not name, each
// import it does not draw, and each name a row may import that no row has.
func checkImports(table map[string]importRow, imports map[string][]string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(table)) {
		row := table[name]
		for _, m := range slices.Sorted(maps.Keys(row.may)) {
			if _, ok := table[m]; !ok {
				out = append(out, fmt.Sprintf("%s's row (line %d) may import %s, which no row names", name, row.line, m))
			}
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(imports)) {
		row, ok := table[pkg]
		if !ok {
			out = append(out, fmt.Sprintf("%s: %s's import table does not name this package (add its row)", pkg, importDoc))
			continue
		}
		for _, imp := range imports[pkg] {
			if row.may[imp] || row.any && imp != "main" && imp != pkg {
				continue
			}
			out = append(out, fmt.Sprintf("%s imports %s: %s's import table does not draw that arrow (add %s to %s's row, line %d, or remove the import)",
				pkg, imp, importDoc, imp, pkg, row.line))
		}
	}
	slices.Sort(out)
	return out
}

// moduleImports walks the module from root as the go tool does (no
// testdata, no folder whose name starts with . or _, no nested module) and
// returns each package that has non-test Go files, by the table's name
// (its folder, main for the root), with the module's packages it imports,
// sorted.
func moduleImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	module := modulePath(t, root)
	sets := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == root {
				return nil
			}
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own (deploy/helm/test)
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := tableName(filepath.ToSlash(filepath.Dir(path)))
		if sets[pkg] == nil {
			sets[pkg] = map[string]bool{}
		}
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if p == module {
				sets[pkg]["main"] = true
			} else if rest, ok := strings.CutPrefix(p, module+"/"); ok {
				sets[pkg][rest] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][]string, len(sets))
	for pkg, set := range sets {
		out[pkg] = slices.Sorted(maps.Keys(set))
	}
	return out
}

// tableName is how the table names the package in dir: main for the root.
func tableName(dir string) string {
	if dir == "." {
		return "main"
	}
	return dir
}

// modulePath is the module line of root's go.mod.
func modulePath(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.TrimSpace(m)
		}
	}
	t.Fatal("go.mod has no module line")
	return ""
}
