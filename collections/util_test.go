package collections_test

import "strings"

func stringsContains(s, sub string) bool { return strings.Contains(s, sub) }
