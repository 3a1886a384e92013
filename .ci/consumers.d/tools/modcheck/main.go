// Command modcheck checks that the modules of this repository require each
// other consistently, so that the tree can be tagged and consumed as
// RELEASING.md describes. Run it from the repository root.
//
// It finds every go.mod below the root (skipping dot directories, testdata,
// vendor, and directories holding a go.work of their own: a workspace apart,
// such as bench/peers, whose dependencies only those who run it download)
// and fails when:
//   - a module is missing from go.work, or go.work uses a directory that
//     holds no module;
//   - a module's path is not the root path followed by its directory;
//   - two modules require different versions of the same sibling, or a
//     sibling version is not canonical semver;
//   - the modules that move together (-together) are not all required at
//     one version;
//   - a module requires one that is never released (-unreleased);
//   - a module that must stay usable alone (-leaves) requires a sibling
//     other than internal (shared helpers no user imports);
//   - a required sibling has no relative replace to its directory, a replace
//     names a sibling that is not required, or a replace names a third-party
//     module (consumers ignore replace lines, so they would build something
//     else than this repository tests).
//
// With -list it prints, for every module, its directory, its path, the
// version the tree requires of it (-default when no sibling requires it,
// "-" for a module never released) and the directories of the siblings it
// requires, comma-separated ("-" for none), one module per line, for
// .ci/consumers.
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// mod is one module of the tree.
type mod struct {
	dir  string // slash-separated, relative to the root
	path string
	file *modfile.File
}

func main() {
	list := flag.Bool("list", false, "print dir, path and required version of every module")
	def := flag.String("default", "v0.1.0", "version for modules no sibling requires (-list)")
	together := flag.String("together", "actor casty cmd gossip replica", "directories of the modules that are tagged together")
	unreleased := flag.String("unreleased", "bench examples", "directories of the modules that are never tagged")
	leaves := flag.String("leaves", "hlc internal mux pager ring wire", "directories of the modules that require no sibling but internal")
	flag.Parse()

	mods, problems := load(".")
	problems = append(problems, check(mods, strings.Fields(*together), strings.Fields(*unreleased), strings.Fields(*leaves))...)
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "modcheck:", p)
		}
		os.Exit(1)
	}
	req := required(mods)
	for _, m := range mods {
		v, by := *def, "(no sibling requires it)"
		if slices.Contains(strings.Fields(*unreleased), m.dir) {
			v, by = "-", "(never released)"
		}
		if r, ok := req[m.path]; ok {
			v, by = r.version, "required by "+strings.Join(r.by, " ")
		}
		if *list {
			fmt.Println(m.dir, m.path, v, siblings(m, mods))
		} else {
			fmt.Printf("%-12s %-8s %s\n", m.dir, v, by)
		}
	}
}

// load reads every module below root and go.work, and reports modules
// and go.work entries that do not match.
func load(root string) ([]mod, []string) {
	var mods []mod
	var problems []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
			return filepath.SkipDir
		}
		if d.IsDir() && p != root {
			if _, err := os.Stat(filepath.Join(p, "go.work")); err == nil {
				return filepath.SkipDir // a workspace of its own
			}
		}
		if d.IsDir() || name != "go.mod" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := modfile.Parse(p, data, nil)
		if err != nil {
			problems = append(problems, err.Error())
			return nil
		}
		if f.Module == nil {
			problems = append(problems, p+": no module line")
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		mods = append(mods, mod{dir: dir, path: f.Module.Mod.Path, file: f})
		return nil
	})
	if err != nil {
		return nil, []string{err.Error()}
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].dir < mods[j].dir })

	data, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		return mods, append(problems, err.Error())
	}
	wf, err := modfile.ParseWork("go.work", data, nil)
	if err != nil {
		return mods, append(problems, err.Error())
	}
	used := map[string]bool{}
	for _, u := range wf.Use {
		used[path.Clean(u.Path)] = true
	}
	for _, m := range mods {
		if !used[m.dir] {
			problems = append(problems, fmt.Sprintf("%s: not in go.work (go work use ./%s)", m.dir, m.dir))
		}
		delete(used, m.dir)
	}
	for u := range used {
		problems = append(problems, fmt.Sprintf("go.work uses %s, which holds no module", u))
	}
	if len(mods) > 0 {
		prefix := strings.TrimSuffix(mods[0].path, "/"+mods[0].dir)
		for _, m := range mods {
			if m.path != prefix+"/"+m.dir {
				problems = append(problems, fmt.Sprintf("%s: module path %s is not %s/%s", m.dir, m.path, prefix, m.dir))
			}
		}
	}
	return mods, problems
}

// requirement is what the tree requires of one sibling.
type requirement struct {
	version string
	by      []string
}

// required returns, per sibling module path, the version the tree requires
// of it; check has made sure there is only one.
func required(mods []mod) map[string]requirement {
	byPath := map[string]mod{}
	for _, m := range mods {
		byPath[m.path] = m
	}
	out := map[string]requirement{}
	for _, m := range mods {
		for _, r := range m.file.Require {
			if _, ok := byPath[r.Mod.Path]; !ok {
				continue
			}
			cur := out[r.Mod.Path]
			cur.version = r.Mod.Version
			cur.by = append(cur.by, m.dir)
			out[r.Mod.Path] = cur
		}
	}
	return out
}

// check returns every inconsistency between the modules' requirements and
// replacements.
func check(mods []mod, together, unreleased, leaves []string) []string {
	var problems []string
	byPath := map[string]mod{}
	for _, m := range mods {
		byPath[m.path] = m
	}
	versions := map[string]map[string][]string{} // sibling dir -> version -> requirers
	for _, m := range mods {
		replaced := map[string]*modfile.Replace{}
		for _, r := range m.file.Replace {
			replaced[r.Old.Path] = r
			sib, ok := byPath[r.Old.Path]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: replaces third-party %s, which consumers of %s would not see", m.dir, r.Old.Path, m.path))
				continue
			}
			want := relative(m.dir, sib.dir)
			if r.Old.Version != "" || r.New.Version != "" || r.New.Path != want {
				problems = append(problems, fmt.Sprintf("%s: replace %s must read %s => %s", m.dir, r.Old.Path, r.Old.Path, want))
			}
		}
		requires := map[string]bool{}
		for _, r := range m.file.Require {
			sib, ok := byPath[r.Mod.Path]
			if !ok {
				continue
			}
			requires[r.Mod.Path] = true
			v := r.Mod.Version
			if !semver.IsValid(v) || semver.Canonical(v) != v {
				problems = append(problems, fmt.Sprintf("%s: requires %s at %s, not a canonical semantic version", m.dir, sib.dir, v))
			}
			if slices.Contains(leaves, m.dir) && sib.dir != "internal" {
				problems = append(problems, fmt.Sprintf("%s: requires %s, but %s must stay usable alone", m.dir, sib.dir, m.dir))
			}
			if slices.Contains(unreleased, sib.dir) {
				problems = append(problems, fmt.Sprintf("%s: requires %s, which is never released", m.dir, sib.dir))
			}
			if replaced[r.Mod.Path] == nil {
				problems = append(problems, fmt.Sprintf("%s: requires %s but has no replace %s => %s", m.dir, sib.dir, r.Mod.Path, relative(m.dir, sib.dir)))
			}
			if versions[sib.dir] == nil {
				versions[sib.dir] = map[string][]string{}
			}
			versions[sib.dir][v] = append(versions[sib.dir][v], m.dir)
		}
		for p := range replaced {
			// A sibling replaced but not required is one the module's build
			// graph reaches only through a sibling's tests (bench and cmd
			// reach arrowpager through casty's): go mod tidy needs to resolve
			// it, and consumers ignore the line. Only unreleased or leaf
			// modules may not do this.
			if _, ok := byPath[p]; ok && !requires[p] && slices.Contains(leaves, m.dir) {
				problems = append(problems, fmt.Sprintf("%s: replaces %s, which it does not require", m.dir, p))
			}
		}
	}
	var train []string // "dir@version" of the modules that move together
	trainVersions := map[string]bool{}
	for _, dir := range sortedKeys(versions) {
		vs := versions[dir]
		if len(vs) > 1 {
			var parts []string
			for _, v := range sortedKeys(vs) {
				parts = append(parts, fmt.Sprintf("%s by %s", v, strings.Join(vs[v], " ")))
			}
			problems = append(problems, fmt.Sprintf("%s is required at more than one version: %s", dir, strings.Join(parts, "; ")))
		}
		if slices.Contains(together, dir) {
			for v := range vs {
				trainVersions[v] = true
				train = append(train, dir+"@"+v)
			}
		}
	}
	if len(trainVersions) > 1 {
		problems = append(problems, fmt.Sprintf("modules tagged together are required at different versions: %s", strings.Join(train, " ")))
	}
	return problems
}

// siblings returns the directories of the siblings m requires, directly or
// not, comma-separated, or "-" for none.
func siblings(m mod, mods []mod) string {
	var dirs []string
	for _, r := range m.file.Require {
		for _, o := range mods {
			if o.path == r.Mod.Path {
				dirs = append(dirs, o.dir)
			}
		}
	}
	if len(dirs) == 0 {
		return "-"
	}
	sort.Strings(dirs)
	return strings.Join(dirs, ",")
}

// relative is the replace target that leads from module dir from to
// module dir to.
func relative(from, to string) string {
	rel, err := filepath.Rel(filepath.FromSlash(from), filepath.FromSlash(to))
	if err != nil {
		return to
	}
	rel = filepath.ToSlash(rel)
	if !strings.HasPrefix(rel, "../") {
		rel = "./" + rel
	}
	return rel
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
