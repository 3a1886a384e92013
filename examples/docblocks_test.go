package examples

// TestDocBlocksCompile keeps the documentation's Go code compiling: every
// ```go block of every Markdown file in the repository (README.md,
// ARCHITECTURE.md, docs/tutorial.md, casty/castytest/README.md, …) and
// every Go code block of a package doc comment (the indented blocks of `// Package …`
// comments) is written into a package of its own under a temporary
// directory of this module, and `go vet` type-checks and vets them all.
// A failure names the .md or .go file and the line of the block (the
// generated files carry //line directives).
//
// Conventions, for a Markdown ```go block:
//
//   - A block that starts with a package clause (after // comments, a
//     program's doc comment) is a whole file, compiled as it is.
//   - Otherwise it is a fragment: top-level declarations, statements, or
//     declarations followed by statements. Declarations go at package
//     level; statements go in a function with ctx (a context.Context) in
//     scope. Imports of the packages the fragment names (context, fmt,
//     casty, castytest, …: see fragmentImports) are added, and variables
//     its top-level statements declare need not be used.
//   - A line holding only "..." or "…" elides code and is dropped.
//   - An HTML comment right before the block (blank lines between are
//     allowed) says more about it:
//     <!-- compile: skip REASON --> leaves an illustrative block unchecked;
//     <!-- compile: prelude
//     Go declarations
//     --> declares what the block uses without showing it (hidden when the
//     Markdown is rendered), for that block only.
//
// Package doc comments cannot hold such comments: their code blocks are
// checked when they parse as Go (a shell line or a table does not, and is
// logged as skipped), with the preludes of docPreludes.
//
// ```sh blocks and unlabelled fences are not Go and are not checked.

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
)

// fragmentImports are the packages a fragment may name without importing
// them, by the name it uses.
var fragmentImports = map[string]string{
	"casty":       "github.com/casty-go/casty/casty",
	"collections": "github.com/casty-go/casty/collections",
	"castytest":   "github.com/casty-go/casty/casty/castytest",
	"arrowpager":  "github.com/casty-go/casty/arrowpager",
	"context":     "context",
	"errors":      "errors",
	"fmt":         "fmt",
	"http":        "net/http",
	"io":          "io",
	"iter":        "iter",
	"log":         "log",
	"os":          "os",
	"slices":      "slices",
	"strings":     "strings",
	"sync":        "sync",
	"synctest":    "testing/synctest",
	"testing":     "testing",
	"time":        "time",
}

// docPreludes declares, per file (slash path from the repository root),
// what the code blocks of its package doc comment use without declaring.
var docPreludes = map[string]string{
	"casty/doc.go": `
var sys *casty.System

type Greeter struct{ Greetings int }

func (g *Greeter) Greet(ctx context.Context, who string) (string, error) { return who, nil }
`,
	"collections/doc.go": `
var sys *casty.System
`,
	"casty/castytest/doc.go": `
var (
	client int
	sys    *casty.System
)

type Cell struct{ V int }

func (c *Cell) Get(ctx context.Context) (int, error) { return c.V, nil }

var Cells = casty.Actor[Cell]()

var t *testing.T

type Ledger struct{ N int }

func (l *Ledger) Add(ctx context.Context, n int) (int, error) { l.N += n; return l.N, nil }

var Ledgers = casty.Actor[Ledger]()

var seed int64

var h = castytest.NewHistory[castytest.RegisterOp[int], castytest.RegisterResult[int]]()

var model = castytest.RegisterModel(0)
`,
}

// docBlock is one code block to check.
type docBlock struct {
	file     string   // slash path from the repository root
	line     int      // line of the block's first code line
	lines    []string // the code
	prelude  string   // Go declarations the block uses
	optional bool     // a doc-comment block: checked only when it parses as Go
}

func (b docBlock) where() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

func TestDocBlocksCompile(t *testing.T) {
	goBin := goCommand(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := collectBlocks(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 {
		t.Fatal("found no code blocks: the repository layout changed?")
	}
	// Files whose Go code a reader copies as it stands: each must still
	// be found, and hold a block.
	for _, want := range []string{"README.md", "docs/tutorial.md"} {
		if !slices.ContainsFunc(blocks, func(b docBlock) bool { return b.file == want }) {
			t.Errorf("no ```go block found in %s", want)
		}
	}
	checked, out, err := vetBlocks(t, goBin, root, blocks)
	if err != nil {
		t.Fatalf("the documentation's code blocks do not compile (go vet):\n%s", out)
	}
	t.Logf("%d code blocks compile and vet clean", checked)
}

// goCommand returns the go command of the toolchain running the test,
// skipping the test when there is none.
func goCommand(t *testing.T) string {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command to compile the documentation's code blocks with")
		}
	}
	return goBin
}

// vetBlocks writes each block into a package of its own and runs go vet
// on them all; it returns how many blocks it checked and, on failure, go
// vet's output with paths relative to root. A block that cannot be made
// into a file fails the test (or, optional, is logged and skipped).
func vetBlocks(t *testing.T, goBin, root string, blocks []docBlock) (int, []byte, error) {
	t.Helper()
	// The packages live in this module (so its go.mod resolves casty), in
	// a directory whose leading underscore keeps ./... patterns out of it.
	dir, err := os.MkdirTemp(".", "_docblocks")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	checked := 0
	for _, b := range blocks {
		src, err := b.source(root)
		if err != nil {
			if b.optional {
				t.Logf("%s: not Go, not checked", b.where())
				continue
			}
			t.Errorf("%s: %v", b.where(), err)
			continue
		}
		pkg := filepath.Join(dir, fmt.Sprintf("b%03d", checked))
		if err := os.Mkdir(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "doc.go"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		checked++
	}
	if t.Failed() {
		t.FailNow()
	}
	cmd := exec.Command(goBin, "vet", "./...")
	cmd.Dir = dir
	cmd.Env = os.Environ()
	if work := filepath.Join(root, "go.work"); fileExists(work) {
		// The workspace resolves every sibling, also when the module's
		// tests run with GOWORK=off.
		cmd.Env = append(cmd.Env, "GOWORK="+work)
	}
	out, err := cmd.CombinedOutput()
	// Positions are relative to dir, two levels below the root.
	return checked, bytes.ReplaceAll(out, []byte("../../"), nil), err
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// collectBlocks finds the ```go blocks of every .md file and the code
// blocks of every package doc comment below root.
func collectBlocks(root string) ([]docBlock, error) {
	var blocks []docBlock
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case strings.HasSuffix(name, ".md"):
			bs, err := markdownBlocks(p, rel)
			blocks = append(blocks, bs...)
			return err
		case strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go"):
			bs, err := packageDocBlocks(p, rel)
			blocks = append(blocks, bs...)
			return err
		}
		return nil
	})
	return blocks, err
}

// markdownBlocks returns the ```go blocks of the Markdown file at p.
func markdownBlocks(p, rel string) ([]docBlock, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var (
		blocks           []docBlock
		fence            string // the open fence, or ""
		cur              *docBlock
		skip             bool
		prelude          []string
		inPrelude        bool
		directiveLine    int // line of a pending directive, 0: none
		skipped, pending bool
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				if cur != nil && !skipped {
					blocks = append(blocks, *cur)
				}
				fence, cur, skipped = "", nil, false
				continue
			}
			if cur != nil {
				cur.lines = append(cur.lines, line)
			}
		case inPrelude:
			if trimmed == "-->" {
				inPrelude = false
				continue
			}
			prelude = append(prelude, line)
		case strings.HasPrefix(trimmed, "<!-- compile:"):
			directive := strings.TrimSpace(strings.TrimPrefix(trimmed, "<!-- compile:"))
			directiveLine, pending = n, true
			switch {
			case strings.HasPrefix(directive, "skip"):
				if !strings.HasSuffix(directive, "-->") {
					return nil, fmt.Errorf("%s:%d: <!-- compile: skip REASON --> must fit on one line", rel, n)
				}
				skip = true
			case directive == "prelude":
				inPrelude = true
			default:
				return nil, fmt.Errorf("%s:%d: unknown directive %q (skip or prelude)", rel, n, directive)
			}
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
			for strings.HasPrefix(trimmed[len(fence):], fence[:1]) {
				fence += fence[:1]
			}
			info := strings.Fields(strings.TrimLeft(trimmed, fence[:1]))
			if len(info) > 0 && info[0] == "go" {
				cur = &docBlock{file: rel, line: n + 1, prelude: strings.Join(prelude, "\n")}
				skipped = skip
			} else if pending {
				return nil, fmt.Errorf("%s:%d: a compile directive must come right before a ```go block", rel, directiveLine)
			}
			skip, prelude, pending = false, nil, false
		case trimmed == "":
		default:
			if pending {
				return nil, fmt.Errorf("%s:%d: a compile directive must come right before a ```go block", rel, directiveLine)
			}
		}
	}
	if fence != "" || inPrelude {
		return nil, fmt.Errorf("%s: unterminated code fence or prelude", rel)
	}
	return blocks, sc.Err()
}

// packageDocBlocks returns the code blocks of the package doc comment of
// the Go file at p: runs of tab-indented comment lines (gofmt writes doc
// comment code blocks that way) and the blank comment lines between them.
func packageDocBlocks(p, rel string) ([]docBlock, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		return nil, err
	}
	if f.Doc == nil {
		return nil, nil
	}
	var blocks []docBlock
	var cur *docBlock
	flush := func() {
		if cur == nil {
			return
		}
		for len(cur.lines) > 0 && strings.TrimSpace(cur.lines[len(cur.lines)-1]) == "" {
			cur.lines = cur.lines[:len(cur.lines)-1]
		}
		blocks = append(blocks, *cur)
		cur = nil
	}
	for _, c := range f.Doc.List {
		text, ok := strings.CutPrefix(c.Text, "//")
		if !ok {
			continue // a /* */ comment: none in this repository
		}
		line := fset.Position(c.Slash).Line
		switch {
		case strings.HasPrefix(text, "\t"):
			if cur == nil {
				cur = &docBlock{file: rel, line: line, prelude: docPreludes[rel], optional: true}
			}
			cur.lines = append(cur.lines, text[1:])
		case strings.TrimSpace(text) == "" && cur != nil:
			cur.lines = append(cur.lines, "")
		default:
			flush()
		}
	}
	flush()
	return blocks, nil
}

// source builds the Go file that checks the block.
func (b docBlock) source(root string) ([]byte, error) {
	var lines []string
	for _, l := range b.lines {
		if t := strings.TrimSpace(l); t == "..." || t == "…" {
			l = "" // elided code; keeps the line numbers
		}
		lines = append(lines, l)
	}
	at := func(i int) string { // a //line directive for lines[i]
		return fmt.Sprintf("//line %s:%d\n", filepath.Join(root, filepath.FromSlash(b.file)), b.line+i)
	}
	if wholeFile(lines) {
		if b.prelude != "" {
			return nil, fmt.Errorf("a whole file takes no prelude")
		}
		src := at(0) + strings.Join(lines, "\n") + "\n"
		if _, err := parser.ParseFile(token.NewFileSet(), "", src, 0); err != nil {
			return nil, err
		}
		return []byte(src), nil
	}
	// The longest run of leading lines that parses as declarations, the
	// rest as statements.
	var firstErr error
	for k := len(lines); k >= 0; k-- {
		decls, stmts := strings.Join(lines[:k], "\n"), strings.Join(lines[k:], "\n")
		if _, err := parser.ParseFile(token.NewFileSet(), "", "package doc\n"+decls, 0); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		body, err := statementsUsingTheirVars(stmts)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		var src strings.Builder
		src.WriteString("package doc\n\n")
		src.WriteString("//line prelude:1\n" + b.prelude + "\n\n")
		if k > 0 {
			src.WriteString(at(0) + decls + "\n\n")
		}
		if strings.TrimSpace(stmts) != "" {
			src.WriteString("//line wrapper:1\nfunc _(ctx context.Context) {\n\t{\n")
			src.WriteString(at(k) + body + "\n")
			src.WriteString("//line wrapper:4\n\t}\n}\n")
		}
		return withImports(src.String())
	}
	return nil, firstErr
}

// wholeFile reports whether lines start with a package clause, after
// blank lines and // comments.
func wholeFile(lines []string) bool {
	for _, l := range lines {
		switch t := strings.TrimSpace(l); {
		case t == "" || strings.HasPrefix(t, "//"):
		default:
			return strings.HasPrefix(t, "package ")
		}
	}
	return false
}

// statementsUsingTheirVars returns stmts with "; _ = &v" after each of its
// top-level statements for every variable that statement declares, so a
// fragment need not use what it declares.
func statementsUsingTheirVars(stmts string) (string, error) {
	const head = "package doc\nfunc _() {\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", head+stmts+"\n}\n", 0)
	if err != nil {
		return "", err
	}
	type insert struct {
		off  int
		text string
	}
	var ins []insert
	for _, s := range f.Decls[0].(*ast.FuncDecl).Body.List {
		var names []string
		switch s := s.(type) {
		case *ast.AssignStmt:
			if s.Tok == token.DEFINE {
				for _, e := range s.Lhs {
					if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
						names = append(names, id.Name)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := s.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, sp := range g.Specs {
					for _, id := range sp.(*ast.ValueSpec).Names {
						if id.Name != "_" {
							names = append(names, id.Name)
						}
					}
				}
			}
		}
		if len(names) > 0 {
			var use strings.Builder
			for _, n := range names {
				use.WriteString("; _ = &" + n) // &: no copy of a lock
			}
			ins = append(ins, insert{fset.Position(s.End()).Offset - len(head), use.String()})
		}
	}
	sort.Slice(ins, func(i, j int) bool { return ins[i].off > ins[j].off })
	for _, in := range ins {
		stmts = stmts[:in.off] + in.text + stmts[in.off:]
	}
	return stmts, nil
}

// withImports adds the imports of fragmentImports that src names and does
// not declare.
func withImports(src string) ([]byte, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	declared := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				declared[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					declared[sp.Name.Name] = true
				case *ast.ValueSpec:
					for _, id := range sp.Names {
						declared[id.Name] = true
					}
				}
			}
		}
	}
	var paths []string
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && !declared[id.Name] {
				if p, ok := fragmentImports[id.Name]; ok && !slices.Contains(paths, p) {
					paths = append(paths, p)
				}
			}
		}
		return true
	})
	if len(paths) == 0 {
		return []byte(src), nil
	}
	sort.Strings(paths)
	var imp strings.Builder
	imp.WriteString("import (\n")
	for _, p := range paths {
		fmt.Fprintf(&imp, "\t%q\n", p)
	}
	imp.WriteString(")\n")
	rest, _ := strings.CutPrefix(src, "package doc\n")
	return []byte("package doc\n\n" + imp.String() + rest), nil
}

// TestDocBlocksCheckerCatchesBrokenBlocks proves the checker fails where
// it must: a Markdown block or a package-doc block that does not compile
// fails, named by its file and line; a skipped block and a block with its
// prelude do not; a directive not followed by a ```go block is an error.
func TestDocBlocksCheckerCatchesBrokenBlocks(t *testing.T) {
	goBin := goCommand(t)
	root := t.TempDir()
	md := strings.Join([]string{
		"# sample", // 1
		"",
		"```go",
		`var x int = "not an int"`, // 4
		"```",
		"",
		"<!-- compile: skip illustrative -->",
		"```go",
		"this is not Go",
		"```",
		"",
		"<!-- compile: prelude",
		`var greeting = "hi"`,
		"-->",
		"```go",
		"fmt.Println(greeting, ctx)", // 16
		"n := 3",
		"...",
		"```",
	}, "\n") + "\n"
	mdPath := filepath.Join(root, "sample.md")
	if err := os.WriteFile(mdPath, []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	blocks, err := markdownBlocks(mdPath, "sample.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0].line != 4 || blocks[1].line != 16 || blocks[1].prelude == "" {
		t.Fatalf("blocks = %+v, want the broken one at line 4 and the one with a prelude at 16 (the skipped one left out)", blocks)
	}
	if _, out, err := vetBlocks(t, goBin, root, blocks[1:]); err != nil {
		t.Fatalf("a valid fragment with its prelude fails:\n%s", out)
	}
	_, out, err := vetBlocks(t, goBin, root, blocks)
	if err == nil || !bytes.Contains(out, []byte("sample.md:4")) || bytes.Contains(out, []byte("sample.md:16")) {
		t.Fatalf("err = %v, output:\n%s\nwant a failure naming sample.md:4 and only it", err, out)
	}

	stray := filepath.Join(root, "stray.md")
	if err := os.WriteFile(stray, []byte("<!-- compile: skip why -->\nsome text\n```go\nx\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := markdownBlocks(stray, "stray.md"); err == nil {
		t.Error("a directive followed by text instead of a ```go block was accepted")
	}

	src := "// Package p shows code.\n//\n//\tvar n int = \"x\"\n//\n// Text.\npackage p\n"
	goPath := filepath.Join(root, "doc.go")
	if err := os.WriteFile(goPath, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	docBlocks, err := packageDocBlocks(goPath, "doc.go")
	if err != nil || len(docBlocks) != 1 || docBlocks[0].line != 3 {
		t.Fatalf("package doc blocks = %+v, %v; want one at line 3", docBlocks, err)
	}
	if _, out, err := vetBlocks(t, goBin, root, docBlocks); err == nil || !bytes.Contains(out, []byte("doc.go:3")) {
		t.Fatalf("err = %v, output:\n%s\nwant a failure naming doc.go:3", err, out)
	}
}
