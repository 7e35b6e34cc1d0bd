from evalspec.cli import main

main()
