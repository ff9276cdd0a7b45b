module github.com/unipoll/unipoll/bench

go 1.24.0

require (
	github.com/cloudwego/netpoll v0.7.2
	github.com/lesismal/llib v1.2.2
	github.com/lesismal/nbio v1.6.8
	github.com/panjf2000/gnet/v2 v2.9.7
	github.com/pawelgaczynski/gain v0.4.0-alpha
	github.com/stretchr/testify v1.12.1
	github.com/unipoll/unipoll v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.33.0
	gonum.org/v1/plot v0.17.0
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/alitto/pond v1.7.1 // indirect
	github.com/bytedance/gopkg v0.1.1 // indirect
	github.com/cloudwego/gopkg v0.1.4 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/panjf2000/ants/v2 v2.11.3 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/rs/zerolog v1.26.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.22.0 // indirect
	golang.org/x/image v0.30.0 // indirect
	golang.org/x/net v0.24.0 // indirect
	golang.org/x/sync v0.16.0 // indirect
	golang.org/x/text v0.28.0 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
)

replace github.com/unipoll/unipoll => ../
