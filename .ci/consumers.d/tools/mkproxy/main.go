// Command mkproxy writes a throw-away Go module proxy, in the GOPROXY file
// layout, holding the modules of this repository's working tree.
//
// Usage:
//
//	mkproxy -out DIR -version v0.1.0 [-versions mux=v0.2.0,...] MODULEDIR...
//
// Each MODULEDIR (relative to the repository root, the current directory)
// is zipped with golang.org/x/mod/zip, the rules the public proxy applies.
// A module is published at the version its siblings require (-versions), or
// at -version when none requires it. When the tag MODULEDIR/VERSION exists,
// the zip holds the tagged files, which is what consumers get; otherwise it
// holds the files git would commit from the working tree: tracked and
// untracked files that are not ignored, without nested modules. The
// output is DIR/<escaped module path>/@v/{list,<v>.info,<v>.mod,<v>.zip}, so
// GOPROXY=file://DIR serves it.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

func main() {
	out := flag.String("out", "", "directory to write the proxy into (required)")
	version := flag.String("version", "v0.1.0", "version for modules no sibling requires")
	versions := flag.String("versions", "", "comma-separated dir=version pairs overriding -version")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	perDir := map[string]string{}
	for _, kv := range strings.Split(*versions, ",") {
		if dir, v, ok := strings.Cut(kv, "="); ok {
			perDir[dir] = v
		}
	}
	for _, dir := range flag.Args() {
		v := *version
		if pv, ok := perDir[dir]; ok {
			v = pv
		}
		if err := publish(*out, filepath.Clean(dir), v); err != nil {
			fmt.Fprintf(os.Stderr, "mkproxy: %s: %v\n", dir, err)
			os.Exit(1)
		}
	}
}

// publish writes the module in dir at version v into the proxy at out.
func publish(out, dir, v string) error {
	if !semver.IsValid(v) || semver.Canonical(v) != v {
		return fmt.Errorf("version %q is not canonical semver", v)
	}
	tag := filepath.ToSlash(dir) + "/" + v
	tagged := exec.Command("git", "rev-parse", "-q", "--verify", "refs/tags/"+tag+"^{commit}").Run() == nil
	var gomod []byte
	var err error
	if tagged {
		gomod, err = exec.Command("git", "show", tag+":"+filepath.ToSlash(dir)+"/go.mod").Output()
	} else {
		gomod, err = os.ReadFile(filepath.Join(dir, "go.mod"))
	}
	if err != nil {
		return fmt.Errorf("reading go.mod: %w", err)
	}
	modPath := modfile.ModulePath(gomod)
	if modPath == "" {
		return errors.New("go.mod has no module line")
	}
	mv := module.Version{Path: modPath, Version: v}
	if err := module.Check(mv.Path, mv.Version); err != nil {
		return err
	}
	esc, err := module.EscapePath(modPath)
	if err != nil {
		return err
	}
	vdir := filepath.Join(out, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	var zbuf bytes.Buffer
	from := "working tree"
	if tagged {
		from = "tag " + tag
		top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
		if err != nil {
			return fmt.Errorf("git rev-parse --show-toplevel: %w", err)
		}
		err = zip.CreateFromVCS(&zbuf, mv, strings.TrimSpace(string(top)), tag, filepath.ToSlash(dir))
		if err != nil {
			return err
		}
	} else {
		files, err := listFiles(dir)
		if err != nil {
			return err
		}
		if err := zip.Create(&zbuf, mv, files); err != nil {
			return err
		}
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{v, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		v + ".zip":  zbuf.Bytes(),
		v + ".mod":  gomod,
		v + ".info": info,
		"list":      []byte(v + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("%s@%s from the %s, %d bytes\n", modPath, v, from, zbuf.Len())
	return nil
}

// listFiles returns the files git would commit under dir: tracked files
// still present and untracked files that are not ignored. zip.Create drops
// those of nested modules and vendor directories.
func listFiles(dir string) ([]zip.File, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	seen := map[string]bool{}
	var files []zip.File
	for _, name := range strings.Split(string(raw), "\x00") {
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		abs := filepath.Join(dir, filepath.FromSlash(name))
		if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the working tree
		}
		files = append(files, file{rel: path.Clean(name), abs: abs})
	}
	return files, nil
}

// file is one working-tree file offered to zip.Create.
type file struct{ rel, abs string }

func (f file) Path() string                 { return f.rel }
func (f file) Lstat() (os.FileInfo, error)  { return os.Lstat(f.abs) }
func (f file) Open() (io.ReadCloser, error) { return os.Open(f.abs) }
