module github.com/unipoll/unipoll/bench

go 1.23.0

require github.com/unipoll/unipoll v0.0.0-00010101000000-000000000000

require golang.org/x/sys v0.33.0 // indirect

replace github.com/unipoll/unipoll => ../
