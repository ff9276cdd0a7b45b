module github.com/unipoll/unipoll

go 1.23.0

require (
	github.com/stretchr/testify v1.12.1 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.33.0 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
