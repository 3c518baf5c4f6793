package lambdatest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/idemkey/idemkey/lambda/lambdatest"
)

// A function's test builds its bootstrap as for deployment, starts it
// against a local Runtime API and invokes it.
func Example() {
	dir, err := os.MkdirTemp("", "greeter")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	bootstrap := filepath.Join(dir, "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bootstrap, "./testdata/greeter")
	if out, err := build.CombinedOutput(); err != nil {
		panic(string(out))
	}

	rt, err := lambdatest.Start()
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	fn := exec.Command(bootstrap)
	fn.Env = append(os.Environ(), rt.Env()...)
	if err := fn.Start(); err != nil {
		panic(err)
	}
	defer func() { _ = fn.Process.Kill(); _ = fn.Wait() }()

	ctx := context.Background()
	res, err := rt.Invoke(ctx, map[string]string{"name": "ada"})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Payload))

	res, err = rt.Invoke(ctx, []byte(`{}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Error.Type+":", res.Error.Message)
	// Output:
	// {"greeting":"hello, ada"}
	// NoNameError: no name to greet
}
