package report

import "flag"

var update = flag.Bool("update", false, "rewrite golden files")

func updateFlag() bool { return *update }
