from evalspec.app.cli.main import main

main()
