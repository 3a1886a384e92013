package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/casty-go/casty/casty/schema"
)

// schema prints a schema, or checks two (schema check).
func (o *options) schema(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "check" {
		return o.schemaCheck(args[1:])
	}
	fs := o.flags("schema")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	var s schema.Schema
	switch {
	case len(pos) >= 2 && pos[0] == "--":
		if s, err = o.runSchema(ctx, pos[1], pos[2:]); err != nil {
			return err
		}
	case len(pos) == 1:
		if s, err = o.readSchema(pos[0]); err != nil {
			return err
		}
	default:
		return usagef("schema takes FILE, -, or -- PROG [ARGS...]; or check OLD NEW")
	}
	if o.json {
		return o.printJSON(s)
	}
	return printSchema(o.stdout, s)
}

// runSchema runs a program that writes its schema to stdout.
func (o *options) runSchema(ctx context.Context, prog string, args []string) (schema.Schema, error) {
	cmd := exec.CommandContext(ctx, prog, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, o.stderr
	if err := cmd.Run(); err != nil {
		return schema.Schema{}, fmt.Errorf("%s: %w", prog, err)
	}
	return decodeSchema(prog, out.Bytes())
}

func (o *options) readSchema(name string) (schema.Schema, error) {
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(o.stdin)
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return schema.Schema{}, err
	}
	return decodeSchema(name, b)
}

func decodeSchema(from string, b []byte) (schema.Schema, error) {
	var s schema.Schema
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("%s: not a casty schema: %w", from, err)
	}
	if s.Version < 1 || s.Version > schema.Version {
		return s, fmt.Errorf("%s: schema version %d, this castyctl reads 1 to %d", from, s.Version, schema.Version)
	}
	if err := checkUnique(s); err != nil {
		return s, fmt.Errorf("%s: not a casty schema: %w", from, err)
	}
	return s, nil
}

// checkUnique refuses a schema that names a kind, message, field or
// handler twice: WriteSchema never does, and the comparison relies on it.
func checkUnique(s schema.Schema) error {
	seen := map[string]bool{}
	once := func(what string) error {
		if seen[what] {
			return fmt.Errorf("%s appears twice", what)
		}
		seen[what] = true
		return nil
	}
	fields := func(where string, fs []schema.Field) error {
		for _, f := range fs {
			if err := once(where + " field " + f.Name); err != nil {
				return err
			}
		}
		return nil
	}
	for _, k := range s.Kinds {
		where := "kind " + k.Name
		if err := once(where); err != nil {
			return err
		}
		if err := fields(where, k.State); err != nil {
			return err
		}
		for _, m := range k.Methods {
			if err := once(where + " handler " + m.Name); err != nil {
				return err
			}
		}
	}
	for _, m := range s.Messages {
		where := "message " + m.Name
		if err := once(where); err != nil {
			return err
		}
		if err := fields(where, m.Fields); err != nil {
			return err
		}
	}
	return nil
}

func printSchema(w io.Writer, s schema.Schema) error {
	t := newTable(w, "WHAT", "NAME", "TYPE", "DETAIL")
	for _, k := range s.Kinds {
		what := "actor"
		if k.Service {
			what = "service"
		}
		t.row(what, k.Name, k.GoType, fmt.Sprintf("replicas %d", k.Replicas))
		for _, f := range k.State {
			t.row("  state", f.Name, f.Type, "")
		}
		for _, m := range k.Methods {
			t.row("  method", m.Name, methodSig(m), m.Shape)
		}
	}
	for _, m := range s.Messages {
		t.row("message", m.Name, m.GoType, "")
		for _, f := range m.Fields {
			t.row("  field", f.Name, f.Type, "")
		}
	}
	return t.flush()
}

func methodSig(m schema.Method) string {
	return "(" + m.Arg + ") " + orDash(m.Result)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// change is one difference between two schemas.
type change struct {
	Severity string `json:"severity"` // "breaking", "warning" or "compatible"
	Where    string `json:"where"`
	What     string `json:"what"`
}

const (
	breaking   = "breaking"
	warning    = "warning"
	compatible = "compatible"
)

// checkReport is schema check's answer.
type checkReport struct {
	Breaking int      `json:"breaking"`
	Warnings int      `json:"warnings"`
	Changes  []change `json:"changes"`
}

// schemaCheck compares two schemas and fails on a breaking change.
func (o *options) schemaCheck(args []string) error {
	fs := o.flags("schema check")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("schema check takes OLD NEW (files, or - for stdin)")
	}
	oldS, err := o.readSchema(pos[0])
	if err != nil {
		return err
	}
	newS, err := o.readSchema(pos[1])
	if err != nil {
		return err
	}
	r := checkReport{Changes: compareSchemas(oldS, newS)}
	for _, c := range r.Changes {
		switch c.Severity {
		case breaking:
			r.Breaking++
		case warning:
			r.Warnings++
		}
	}
	if o.json {
		if err := o.printJSON(r); err != nil {
			return err
		}
	} else {
		if len(r.Changes) > 0 {
			t := newTable(o.stdout, "SEVERITY", "WHERE", "CHANGE")
			for _, c := range r.Changes {
				t.row(c.Severity, c.Where, c.What)
			}
			if err := t.flush(); err != nil {
				return err
			}
		}
		verdict := "compatible: safe for a rolling deploy"
		if r.Breaking > 0 {
			verdict = "NOT safe for a rolling deploy"
		}
		fmt.Fprintf(o.stdout, "%d breaking, %d warnings, %d compatible changes: %s\n",
			r.Breaking, r.Warnings, len(r.Changes)-r.Breaking-r.Warnings, verdict)
	}
	if r.Breaking > 0 {
		return exitError{code: exitBreaking}
	}
	return nil
}

// compareSchemas lists what changed from old to new, each change judged
// by whether members of both versions can run side by side (wire/SPEC.md,
// "Schema evolution"): fields may come and go, but a field keeps its
// type, a wire name keeps its type, a handler keeps its signature, a kind
// keeps its replica count.
func compareSchemas(old, new schema.Schema) []change {
	var out []change
	add := func(sev, where, format string, args ...any) {
		out = append(out, change{Severity: sev, Where: where, What: fmt.Sprintf(format, args...)})
	}
	newMsgs := map[string]schema.Message{}
	for _, m := range new.Messages {
		newMsgs[m.Name] = m
	}
	oldMsgs := map[string]bool{}
	for _, om := range old.Messages {
		oldMsgs[om.Name] = true
		where := "message " + om.Name
		nm, ok := newMsgs[om.Name]
		if !ok {
			add(warning, where, "removed: members of the old version may still send it until the deploy completes")
			continue
		}
		compareFields(add, where, "field", om.GoType, nm.GoType, om.Fields, nm.Fields)
	}
	for _, nm := range new.Messages {
		if !oldMsgs[nm.Name] {
			add(compatible, "message "+nm.Name, "added")
		}
	}

	newKinds := map[string]schema.Kind{}
	for _, k := range new.Kinds {
		newKinds[k.Name] = k
	}
	oldKinds := map[string]bool{}
	label := func(k schema.Kind) string {
		if k.Service {
			return "service " + k.Name
		}
		return "actor " + k.Name
	}
	for _, ko := range old.Kinds {
		oldKinds[ko.Name] = true
		where := label(ko)
		nk, found := newKinds[ko.Name]
		if !found {
			add(warning, where, "removed: members of the old version still call it until the deploy completes")
			continue
		}
		if ko.Service != nk.Service {
			add(breaking, where, "changed between actor and service: old and new members would route its calls differently")
			continue
		}
		if ko.Replicas != nk.Replicas {
			add(breaking, where, "replicas changed %d → %d: old and new members would place its state on different nodes (change it with a full restart, or declare a new kind)", ko.Replicas, nk.Replicas)
		}
		if !ko.Service && compareFields(add, where, "state field", ko.GoType, nk.GoType, ko.State, nk.State) {
			continue
		}
		compareMethods(add, where, ko.Methods, nk.Methods)
	}
	for _, nk := range new.Kinds {
		if !oldKinds[nk.Name] {
			add(compatible, label(nk), "added")
		}
	}
	slices.SortStableFunc(out, func(a, b change) int { return severityRank(a.Severity) - severityRank(b.Severity) })
	return out
}

func severityRank(s string) int {
	switch s {
	case breaking:
		return 0
	case warning:
		return 1
	}
	return 2
}

// compareFields compares one struct's fields; it reports true when the
// wire name now names an unrelated type (and then lists nothing more).
func compareFields(add func(sev, where, format string, args ...any), where, what, oldGo, newGo string, old, new []schema.Field) (reused bool) {
	newF := map[string]string{}
	for _, f := range new {
		newF[f.Name] = f.Type
	}
	common := 0
	for _, f := range old {
		if _, ok := newF[f.Name]; ok {
			common++
		}
	}
	if oldGo != newGo && common == 0 && len(old) > 0 && len(new) > 0 {
		add(breaking, where, "wire name reused for another type: was %s {%s}, now %s {%s}, with no field in common",
			oldGo, fieldList(old), newGo, fieldList(new))
		return true
	}
	if oldGo != newGo {
		add(compatible, where, "Go type renamed %s → %s; the wire name is kept", oldGo, newGo)
	}
	oldF := map[string]bool{}
	for _, f := range old {
		oldF[f.Name] = true
		nt, ok := newF[f.Name]
		switch {
		case !ok:
			add(compatible, where, "%s %s removed (old members' values for it are ignored)", what, f.Name)
		case nt != f.Type:
			add(breaking, where, "%s %s changed type %s → %s: members of the two versions cannot decode each other's values", what, f.Name, f.Type, nt)
		}
	}
	for _, f := range new {
		if !oldF[f.Name] {
			add(compatible, where, "%s %s %s added (zero when an old member sends it)", what, f.Name, f.Type)
		}
	}
	return false
}

func fieldList(fs []schema.Field) string {
	var parts []string
	for _, f := range fs {
		parts = append(parts, f.Name+" "+f.Type)
	}
	return strings.Join(parts, "; ")
}

func compareMethods(add func(sev, where, format string, args ...any), where string, old, new []schema.Method) {
	newM := map[string]schema.Method{}
	for _, m := range new {
		newM[m.Name] = m
	}
	oldM := map[string]bool{}
	for _, om := range old {
		oldM[om.Name] = true
		nm, ok := newM[om.Name]
		switch {
		case !ok:
			add(warning, where, "handler %s removed: members of the old version still call it until the deploy completes", om.Name)
		case om.Shape != nm.Shape:
			add(breaking, where, "handler %s changed shape %s → %s", om.Name, om.Shape, nm.Shape)
		case om.Arg != nm.Arg:
			add(breaking, where, "handler %s argument changed type %s → %s", om.Name, orDash(om.Arg), orDash(nm.Arg))
		case om.Result != nm.Result:
			add(breaking, where, "handler %s result changed type %s → %s", om.Name, orDash(om.Result), orDash(nm.Result))
		}
	}
	for _, nm := range new {
		if !oldM[nm.Name] {
			add(compatible, where, "handler %s added (old members answer it as unknown until the deploy completes)", nm.Name)
		}
	}
}
