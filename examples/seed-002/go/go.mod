module gatebench.example/seed002

go 1.19
