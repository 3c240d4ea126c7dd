module example.com/go-web

go 1.19

require github.com/go-chi/chi/v5 v5.0.12
